// --rdzv_backend=etcd-v3: agents on etcd without any daemon, as a torchrun user runs them. Real
// etcd members, real agents, real workers. Every agent serves the rendezvous over etcd; the one
// whose server wins the job's lead runs its rounds, and the others send their agents to it. A
// worker's store calls go to its own agent's server, which checks the job's credential in etcd.
// When the leading agent's node dies (kill -9 of its agent: its workers die with it), the other
// agents' servers take the job over and the next round forms without that node.
#include <signal.h>

#include "integration/multinode/multinode_support.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::testing {
namespace {

// One agent of job `job` over `cluster`, logging at info (so that it says when it leads).
std::unique_ptr<ChildProcess> EtcdV3Agent(const EtcdCluster& cluster, const std::string& job,
                                          const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kDdprun, "--rdzv_backend=etcd-v3",
                                   "--rdzv_endpoint=" + cluster.EndpointList(), "--rdzv_id=" + job,
                                   QuickRendezvousFlag(30)};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<ChildProcess>(
      argv, std::map<std::string, std::string>{{"DDPRUN_LOG_LEVEL", "info"}});
}

bool Leads(const ChildProcess& agent, const std::string& job) {
  return Count(agent.stderr_text(), "leads job '" + job + "'") >= 1;
}

// The pid of the worker the agent's newest "]: ready PID" line names.
pid_t NewestReadyWorker(const ChildProcess& agent) {
  const std::string text = agent.stdout_text();
  const size_t at = text.rfind("]: ready ");
  REQUIRE(at != std::string::npos);
  return std::stoi(text.substr(at + std::string("]: ready ").size()));
}

TEST_CASE(
    "agents on --rdzv_backend=etcd-v3 run a job through etcd alone: one agent's server leads, "
    "and every worker's store calls go through its own agent's server") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  ScratchDir dir;
  WriteFile(dir / "token", "etcd-v3-token\n");
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(EtcdV3Agent(cluster, "v3-store",
                                 {"--nnodes=2", "--nproc_per_node=2",
                                  "--token-file=" + dir / "token", kTestWorker, "store"}));
  }
  int leading = 0;
  for (const auto& agent : agents) {
    INFO(agent->stdout_text() << agent->stderr_text());
    // The store worker sets, reads, counts, waits on every rank and is refused a wrong token.
    CHECK(ExitCode(*agent) == 0);
    leading += Leads(*agent, "v3-store") ? 1 : 0;
  }
  CHECK(leading == 1);
  // The leading agent forgot the ended job before it exited: its record, credential, store keys
  // and lead are gone, and the same --rdzv_id runs again at once.
  CHECK(cluster.JobKeyCount("v3-store") == 0);
  std::vector<std::unique_ptr<ChildProcess>> again;
  for (int i = 0; i < 2; ++i) {
    again.push_back(EtcdV3Agent(cluster, "v3-store",
                                {"--nnodes=2", "--nproc_per_node=1",
                                 "--token-file=" + dir / "token", kTestWorker, "store"}));
  }
  for (const auto& agent : again) {
    INFO(agent->stdout_text() << agent->stderr_text());
    CHECK(ExitCode(*agent) == 0);
  }
}

TEST_CASE(
    "kill -9 of the agent whose server leads an etcd-v3 job: another agent's server takes the job "
    "and the next round forms without that node") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(
        EtcdV3Agent(cluster, "v3-failover",
                    {"--nnodes=2:3", "--nproc_per_node=1", kTestWorker, "wait-for-signal"}));
  }
  AwaitReadyWorkers(agents);
  size_t leader = agents.size();
  for (size_t i = 0; i < agents.size(); ++i) {
    if (Leads(*agents[i], "v3-failover")) leader = i;
  }
  REQUIRE(leader < agents.size());
  ::kill(agents[leader]->pid(), SIGKILL);  // the node is gone: its worker dies with its agent
  agents[leader]->Wait(30s);
  agents.erase(agents.begin() + static_cast<std::ptrdiff_t>(leader));

  // The two others restart their workers into a round of two, under a new leader among them.
  for (const auto& agent : agents) {
    INFO(agent->stdout_text() << agent->stderr_text());
    REQUIRE(AwaitLines(*agent, "]: ready ", 2));
  }
  CHECK(Leads(*agents[0], "v3-failover") + Leads(*agents[1], "v3-failover") == 1);
  // The new leader recorded the round it formed, with its two members, before they ran it.
  const v1::JobRecord recorded = cluster.JobRecordOf("v3-failover");
  CHECK(recorded.state() == v1::JobRecord::RUNNING);
  CHECK(recorded.round() >= 1);
  CHECK(recorded.members_size() == 2);
  for (const auto& agent : agents) ::kill(NewestReadyWorker(*agent), SIGTERM);
  for (const auto& agent : agents) {
    INFO(agent->stdout_text() << agent->stderr_text());
    CHECK(ExitCode(*agent) == 0);
  }
}

TEST_CASE(
    "the etcd backend of etcd's v2 API, and an unreachable etcd, are refused with what to do") {
  auto v2 = Run(Ddprun({"--nnodes=2", "--rdzv_backend=etcd", "--rdzv_endpoint=127.0.0.1:2379",
                        "--rdzv_id=j", "true"}));
  CHECK(v2.code() == 2);
  CHECK(v2.err.find("etcd 3.6 removed; ddprun speaks v3: use --rdzv_backend=etcd-v3") !=
        std::string::npos);
  // A loopback address of this test's own, where no etcd listens.
  const std::string nobody = UnsharedLoopbackEndpoint();
  auto unreachable = Run(Ddprun({"--nnodes=2", "--rdzv_backend=etcd-v3",
                                 "--rdzv_endpoint=" + nobody, "--rdzv_id=j", "true"}));
  INFO(unreachable.err);
  CHECK(unreachable.code() == 1);
  CHECK(unreachable.err.find("--rdzv_backend=etcd-v3: etcd: ") != std::string::npos);
  CHECK(unreachable.err.find("start the members first") != std::string::npos);
}

}  // namespace
}  // namespace ddprun::testing
