// A PyTorch DDP job on two ddprun nodes of two workers each: the world of four forms through
// MASTER_ADDR/MASTER_PORT and trains, on loopback and across network namespaces, and a failure
// restarts both nodes with one job-wide TORCHELASTIC_RESTART_COUNT. And one started on three
// hosts' daemons from one command.
#include "integration/multinode/host_daemon_support.h"
#include "pytorch_support.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

std::vector<std::string> TwoNodeFlags(const std::string& endpoint, const std::string& id,
                                      std::vector<std::string> program) {
  std::vector<std::string> flags = {
      "--nnodes=2", "--nproc_per_node=2", "--rdzv_endpoint=" + endpoint, "--rdzv_id=" + id,
      "--rdzv_conf=last_call_timeout=0.3,heartbeat_timeout=5,join_timeout=60"};
  flags.insert(flags.end(), program.begin(), program.end());
  return flags;
}

std::string Outputs(const std::vector<std::unique_ptr<ChildProcess>>& agents) {
  std::string text;
  for (const auto& agent : agents) text += agent->stdout_text() + agent->stderr_text();
  return text;
}

}  // namespace

TEST_CASE("two ddprun nodes of two workers run a PyTorch DDP job as one world of four",
          "[ddprun][start_agnostic]") {
  if (!HavePytorch()) return;
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int node = 0; node < 2; ++node) {
    agents.push_back(StartAgent(
        TwoNodeFlags(daemon.endpoint(), "torch2", {Script("ddp_train.py"), "--epochs", "1"}),
        PytorchEnvPrefix()));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  CHECK(Count(Outputs(agents), "[rank0]: trained world=4 epochs=1 ") == 1);
}

TEST_CASE("a PyTorch worker failing on one node restarts both, with one job-wide restart count",
          "[ddprun]") {
  if (!HavePytorch()) return;
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int node = 0; node < 2; ++node) {
    std::vector<std::string> flags =
        TwoNodeFlags(daemon.endpoint(), "torch-restart",
                     {Script("ddp_train.py"), "--epochs", "1", "--fail-once"});
    flags.insert(flags.begin(), "--max_restarts=1");
    agents.push_back(StartAgent(flags, PytorchEnvPrefix()));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  // Every worker of both nodes ran in attempt 0 and in attempt 1, and saw the same count.
  for (auto& agent : agents) {
    CHECK(Count(agent->stdout_text(), "restart=0") == 2);
    CHECK(Count(agent->stdout_text(), "restart=1") == 2);
    CHECK(Count(agent->stdout_text(), "restart=2") == 0);
  }
  CHECK(Count(Outputs(agents), "[rank0]: trained world=4 ") == 1);
}

TEST_CASE("two nodes in their own network namespaces run a PyTorch DDP job as one world of four",
          "[ddprun][start_agnostic]") {
  if (!HavePytorch()) return;
  auto network = NetworkOrSkip(2);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  auto agents = job.StartAgents(2, "torch-ns", "2", {Script("ddp_train.py"), "--epochs", "1"}, 2,
                                PytorchEnvPrefix());
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  CHECK(Count(Outputs(agents), "[rank0]: trained world=4 epochs=1 ") == 1);
}

TEST_CASE("a PyTorch DDP script trains across three hosts' daemons from one command",
          "[ddprun][start_agnostic]") {
  if (!HavePytorch()) return;
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  hosts.submitter_prefix = PytorchEnvPrefix();  // travels to the hosts with the environment
  auto submitter = hosts.Submitter(
      SubmitArgs(hosts, {"--nproc_per_node=2"}, {Script("ddp_train.py"), "--epochs", "1"}));
  auto exit = submitter->Wait(240s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 0);
  CHECK(Count(submitter->stdout_text(), "[rank0]: trained world=6 epochs=1 ") == 1);
}
