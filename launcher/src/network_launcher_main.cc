// NetworkLauncherMain; see network_launcher_main.h.
#include "network_launcher_main.h"

#include <signal.h>

#include <cstdlib>
#include <cstring>

#include "ddprun/base/timeline.h"
#include "ddprun/rendezvous/grpc_logging.h"
#include "job_commands.h"
#include "launch.h"
#include "launcher_main.h"
#include "network_launcher.h"
#include "network_node_setup.h"
#include "status_command.h"
#include "store_helper.h"
#include "submit.h"

namespace ddprun {
namespace {

// status, attach, logs or cancel, with the arguments after it.
int RunJobCommand(const std::string& command, const std::vector<std::string>& rest) {
  if (command == "status") {
    // A rendezvous server's rounds, or (without an endpoint) a host daemon's submitted jobs.
    bool endpoint = std::getenv("PET_RDZV_ENDPOINT") != nullptr;
    for (const std::string& arg : rest) {
      endpoint =
          endpoint || arg.rfind("--rdzv_endpoint", 0) == 0 || arg.rfind("--rdzv-endpoint", 0) == 0;
    }
    return endpoint ? StatusMain(rest) : HostStatusMain(rest);
  }
  if (command == "attach") return AttachMain(rest);
  if (command == "logs") return LogsMain(rest);
  return CancelMain(rest);
}

}  // namespace

int NetworkLauncherMain(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], kStoreHelperArgument) == 0) return ServeStoreMain(argv[2]);
  timeline::Begin();
  RouteGrpcLogsToDebug();
  // A closed console (`ddprun ... | head`) must not kill ddprun: writes fail instead, and the job,
  // here or on its hosts, goes on to its end.
  ::signal(SIGPIPE, SIG_IGN);
  if (IsJobCommand(argc, argv)) {
    return RunJobCommand(argv[1], std::vector<std::string>(argv + 2, argv + argc));
  }
  const ParsedCommandLine parsed =
      ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (auto answer = AnswerWithoutAJob(parsed)) return *answer;
  if (auto* submit = std::get_if<SubmitRequest>(&parsed)) return SubmitJob(*submit);
  return Launch(std::get<LaunchConfig>(parsed), SetUpNetworkNode);
}

}  // namespace ddprun
