// LauncherMain; see launcher_main.h.
#include "launcher_main.h"

#include <signal.h>

#include <cstdio>
#include <cstring>

#include "ddprun/base/secret_token.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/timeline.h"
#include "ddprun/base/version.h"
#include "launch.h"
#include "network_launcher.h"
#include "on_demand_store.h"

namespace ddprun {
namespace {

constexpr int kUsageExit = 2;

// Whether the job needs what only the network launcher has: a rendezvous across nodes, or the
// operators' endpoint, which serves a rendezvous's pages.
bool NeedsNetworkLauncher(const LaunchConfig& config) {
  return config.multi_node || config.metrics_port.has_value();
}

// One node, its store started on demand by the network launcher's store mode.
Result<NodeSetup> SetUpNodeWithOnDemandStore(const LaunchConfig& config,
                                             boost::asio::io_context& io, JobEnvironment& job) {
  SingleNodeStore store;
  ASSIGN_OR_RETURN(store.token, NewSecretToken("the store token"));
  ASSIGN_OR_RETURN(auto served, OnDemandStore::Listen(io, store.token));
  store.address = served->address();
  store.services = std::move(served);
  return SetUpSingleNode(config, io, job, std::move(store), nullptr);
}

}  // namespace

bool IsJobCommand(int argc, char** argv) {
  if (argc < 2) return false;
  for (const char* command : {"status", "attach", "logs", "cancel"}) {
    if (std::strcmp(argv[1], command) == 0) return true;
  }
  return false;
}

std::optional<int> AnswerWithoutAJob(const ParsedCommandLine& parsed) {
  // Written with stdio: <iostream>'s static initializer (the standard streams and their locale)
  // would run at every start.
  if (auto* help = std::get_if<HelpRequest>(&parsed)) {
    std::fwrite(help->text.data(), 1, help->text.size(), stdout);
    return 0;
  }
  if (std::holds_alternative<VersionRequest>(parsed)) {
    std::printf("ddprun %s\n", DDPRUN_VERSION);
    return 0;
  }
  if (auto* error = std::get_if<UsageError>(&parsed)) {
    std::fprintf(stderr, "ddprun: error: %s\n", error->message.c_str());
    return kUsageExit;
  }
  return std::nullopt;
}

int LauncherMain(int argc, char** argv) {
  timeline::Begin();
  // A closed console (`ddprun ... | head`) must not kill ddprun: writes fail instead, and the job
  // goes on to its end.
  ::signal(SIGPIPE, SIG_IGN);
  if (IsJobCommand(argc, argv)) return ExecNetworkLauncher(argv);
  const ParsedCommandLine parsed =
      ParseCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (auto answer = AnswerWithoutAJob(parsed)) return *answer;
  if (std::holds_alternative<SubmitRequest>(parsed)) return ExecNetworkLauncher(argv);
  const auto& config = std::get<LaunchConfig>(parsed);
  if (NeedsNetworkLauncher(config)) return ExecNetworkLauncher(argv);
  return Launch(config, SetUpNodeWithOnDemandStore);
}

}  // namespace ddprun
