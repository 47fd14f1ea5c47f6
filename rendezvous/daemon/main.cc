// `ddprund`: the rendezvous daemon. Parses its command line, serves the rendezvous service on
// --bind:--port until SIGTERM or SIGINT, then shuts down (pending calls are failed, not dropped).
#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/rendezvous/daemon_config.h"
#include "ddprun/rendezvous/rendezvous_server.h"

int main(int argc, char** argv) {
  using namespace ddprun;
  auto parsed = ParseDaemonCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (auto* help = std::get_if<DaemonHelp>(&parsed)) {
    std::cout << help->text;
    return 0;
  }
  if (auto* error = std::get_if<DaemonUsageError>(&parsed)) {
    std::fprintf(stderr, "ddprund: error: %s\n", error->message.c_str());
    return 2;
  }
  const DaemonConfig& config = std::get<DaemonConfig>(parsed);

  // Block the stop signals before any thread starts, so that every thread inherits the mask and
  // only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (int error = pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr); error != 0) {
    std::fprintf(stderr, "ddprund: error: blocking SIGTERM and SIGINT: %s\n", std::strerror(error));
    return 1;
  }

  RendezvousServerOptions options;
  options.bind_host = config.bind;
  options.port = config.port;
  options.token = config.token;
  options.tls_cert_pem = config.tls_cert_pem;
  options.tls_key_pem = config.tls_key_pem;
  options.tls_client_ca_pem = config.tls_ca_pem;
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "ddprund: error: %s\n", server.status().message().c_str());
    return 1;
  }
  const int port = server.value()->port();
  if (!config.port_file.empty()) {
    if (Status written = WriteFileAtomically(config.port_file, std::to_string(port) + "\n");
        !written.ok()) {
      std::fprintf(stderr, "ddprund: error: --port-file: %s\n", written.message().c_str());
      return 1;
    }
  }
  std::printf("ddprund listening on %s:%d\n", config.bind.c_str(), port);
  if (std::fflush(stdout) != 0) {
    // Whoever waits for that line will not see it; the server still serves.
    const int error = errno;
    GetLogger("rendezvous")
        ->warn("{}", ErrnoError("writing the listening line to stdout", error).message());
  }

  int signal_number = 0;
  if (int error = sigwait(&stop_signals, &signal_number); error != 0) {
    std::fprintf(stderr, "ddprund: error: waiting for SIGTERM or SIGINT: %s; shutting down\n",
                 std::strerror(error));
    server.value()->Shutdown();
    return 1;
  }
  GetLogger("rendezvous")->info("received signal {}; shutting down", signal_number);
  server.value()->Shutdown();
  return 0;
}
