// gRPC's own error lines stay out of the user's stderr once routed to ddprun's debug log: the
// real gRPC server, failing to bind a port that is taken (what an agent that loses the race to
// host the rendezvous sees).
#include "ddprun/rendezvous/grpc_logging.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "ddprun/base/bound_socket.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "support/child_process.h"

using namespace ddprun;

namespace {

// What the process writes to stderr while `body` runs.
template <typename Body>
std::string StderrOf(Body&& body) {
  testing::ScratchDir dir;
  const std::string path = dir / "stderr";
  const int file = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  REQUIRE(file >= 0);
  const int saved = ::dup(STDERR_FILENO);
  ::dup2(file, STDERR_FILENO);
  ::close(file);
  body();
  ::dup2(saved, STDERR_FILENO);
  ::close(saved);
  return testing::ReadFile(path);
}

}  // namespace

TEST_CASE(
    "a rendezvous server that loses its port to another process leaves no gRPC line on "
    "stderr, only its status") {
  auto taken = BoundSocket::Bind("127.0.0.1", 0);
  REQUIRE(taken.ok());
  REQUIRE(::listen(taken->fd(), 1) == 0);
  RendezvousServerOptions options;
  options.bind_host = "127.0.0.1";
  options.port = taken->port();
  RouteGrpcLogsToDebug();
  Result<std::unique_ptr<RendezvousServer>> server = std::unique_ptr<RendezvousServer>();
  const std::string printed = StderrOf([&] { server = RendezvousServer::Start(options); });
  CHECK_FALSE(server.ok());
  CHECK(printed.empty());
}
