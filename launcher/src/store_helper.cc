// ServeStoreMain; see store_helper.h.
#include "store_helper.h"

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "ddprun/base/parsing.h"
#include "ddprun/rendezvous/grpc_logging.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "network_launcher.h"

namespace ddprun {

int ServeStoreMain(const char* listener_fd) {
  const std::optional<int> fd = ParseInteger<int>(listener_fd, 3);
  const char* token = std::getenv(kStoreTokenVariable);
  if (!fd || token == nullptr) {
    std::fprintf(stderr,
                 "ddprun: error: the store mode is ddprun's own (a listening socket's descriptor "
                 "and %s); run ddprun instead\n",
                 kStoreTokenVariable);
    return 2;
  }
  RouteGrpcLogsToDebug();
  // Blocked before any thread starts, so that every thread leaves them to sigwait.
  sigset_t stop;
  sigemptyset(&stop);
  for (int signal : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&stop, signal);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  RendezvousServerOptions options;
  options.bind_host = "127.0.0.1";
  options.token = token;
  options.start_on_first_connection = true;
  options.listener_fd = *fd;
  ::unsetenv(kStoreTokenVariable);
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "ddprun: error: the job's store: %s\n", server.status().message().c_str());
    return 1;
  }
  int signal = 0;
  sigwait(&stop, &signal);
  return 0;
}

}  // namespace ddprun
