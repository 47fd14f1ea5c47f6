// Agents that fail over between daemons on one etcd cluster (docs/control_plane.md): real etcd
// members, real ddprund daemons with --store=etcd, real agents given every daemon in
// --rdzv_endpoint, real workers. One daemon leads the job; after its kill -9 the agents re-join
// another, which takes the job's lead once the dead one's lease has run out, and the workers are
// not restarted: the job's membership did not change.
#include <signal.h>

#include "integration/multinode/multinode_support.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::testing {
namespace {

std::vector<std::string> OnEtcd(const EtcdCluster& cluster) {
  return {"--store=etcd", "--etcd-endpoints=" + cluster.EndpointList()};
}

bool SaysItLeads(ChildProcess& daemon, const std::string& job) {
  return Count(daemon.stderr_text(), "leads job '" + job + "'") >= 1;
}

bool RunsJob(Daemon& daemon, const std::string& job) {
  auto status = RunStatus({"--rdzv_endpoint=" + daemon.endpoint(), "--json"});
  REQUIRE(status.code() == 0);
  return Count(status.out, "\"job_id\": \"" + job + "\"") == 1;
}

TEST_CASE(
    "kill -9 of the daemon leading a job: its agents re-join another daemon on the same etcd, "
    "and the workers run on") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  Daemon a(OnEtcd(cluster));
  Daemon b(OnEtcd(cluster));
  // Each agent tries the daemons in another order: without one leader per job, each daemon
  // would hold half of the job and neither half could form a round.
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (const std::string& endpoints :
       {a.endpoint() + "," + b.endpoint(), b.endpoint() + "," + a.endpoint()}) {
    agents.push_back(StartAgent({"--nnodes=2", "--nproc_per_node=1", "--rdzv_endpoint=" + endpoints,
                                 "--rdzv_id=failover", QuickRendezvousFlag(30), kTestWorker,
                                 "wait-for-signal"}));
  }
  std::vector<pid_t> workers;
  for (auto& agent : agents) {
    auto line = agent->WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    INFO(agent->stderr_text());
    REQUIRE(line.has_value());
    workers.push_back(std::stoi(line->substr(line->rfind(' ') + 1)));
  }
  // One daemon acts for the job; the other does not run it.
  const bool a_runs = RunsJob(a, "failover");
  REQUIRE(a_runs != RunsJob(b, "failover"));
  Daemon& leader = a_runs ? a : b;
  Daemon& other = a_runs ? b : a;

  leader.process().Signal(SIGKILL);
  REQUIRE(leader.process().Wait(10s).has_value());
  CHECK(SaysItLeads(leader.process(), "failover"));
  auto [back, last] =
      AwaitStatus({"--rdzv_endpoint=" + other.endpoint(), "--json"},
                  [](const std::string& out) { return Count(out, "\"state\": \"running\"") == 3; });
  INFO(last);
  REQUIRE(back);  // the job and both nodes, running round 0 again, at the other daemon
  CHECK(Count(last, "\"round\": 0") == 1);

  for (pid_t worker : workers) ::kill(worker, SIGTERM);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  for (auto& agent : agents) {
    INFO(agent->stdout_text() + agent->stderr_text());
    CHECK(Count(agent->stdout_text(), "]: ready ") == 1);  // never restarted
  }
  other.process().Signal(SIGTERM);
  REQUIRE(other.process().Wait(10s).has_value());  // its output is read to the end
  CHECK(SaysItLeads(other.process(), "failover"));
}

}  // namespace
}  // namespace ddprun::testing
