// Agents that fail over between daemons on one etcd cluster (docs/control_plane.md): real etcd
// members, real ddprund daemons with --store=etcd, real agents given every daemon in
// --rdzv_endpoint, real workers. One daemon leads the job; after its kill -9 the agents re-join
// another, which takes the job's lead once the dead one's lease has run out, and the workers are
// not restarted: the job's membership did not change. A daemon that leads nothing is not missed,
// and every daemon killed and started again at once costs the workers nothing either.
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

// "h:p,h:p,h:p" of the daemons, starting with daemons[first].
std::string EndpointsFrom(const std::vector<std::unique_ptr<Daemon>>& daemons, size_t first) {
  std::string list;
  for (size_t i = 0; i < daemons.size(); ++i) {
    list += (i == 0 ? "" : ",") + daemons[(first + i) % daemons.size()]->endpoint();
  }
  return list;
}

TEST_CASE(
    "kill -9 of a daemon that leads nothing changes nothing, and kill -9 of the one leading the "
    "job "
    "makes its agents re-join another daemon on the same etcd, and the workers run on") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  std::vector<std::unique_ptr<Daemon>> daemons;
  for (int i = 0; i < 3; ++i) daemons.push_back(std::make_unique<Daemon>(OnEtcd(cluster)));
  // Each agent tries the daemons in another order: without one leader per job, two daemons
  // would each hold half of the job and neither half could form a round.
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (size_t first : {size_t{0}, size_t{1}}) {
    agents.push_back(StartAgent(
        {"--nnodes=2", "--nproc_per_node=1", "--rdzv_endpoint=" + EndpointsFrom(daemons, first),
         "--rdzv_id=failover", QuickRendezvousFlag(30), kTestWorker, "wait-for-signal"}));
  }
  std::vector<pid_t> workers;
  for (auto& agent : agents) {
    auto line = agent->WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    INFO(agent->stderr_text());
    REQUIRE(line.has_value());
    workers.push_back(std::stoi(line->substr(line->rfind(' ') + 1)));
  }
  // One daemon acts for the job; the others do not run it.
  std::vector<size_t> running;
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (RunsJob(*daemons[i], "failover")) running.push_back(i);
  }
  REQUIRE(running.size() == 1);
  Daemon& leader = *daemons[running[0]];
  Daemon& bystander = *daemons[(running[0] + 1) % 3];
  Daemon& survivor = *daemons[(running[0] + 2) % 3];
  const auto job_running_at = [](Daemon& daemon) {
    return AwaitStatus(
        {"--rdzv_endpoint=" + daemon.endpoint(), "--json"}, [](const std::string& out) {
          return Count(out, "\"state\": \"running\"") == 3 && Count(out, "\"round\": 0") == 1;
        });
  };

  bystander.process().Signal(SIGKILL);
  REQUIRE(bystander.process().Wait(10s).has_value());
  auto [unchanged, before] = job_running_at(leader);
  INFO(before);
  CHECK(unchanged);  // the job and both nodes, in round 0, at the leader
  CHECK_FALSE(SaysItLeads(bystander.process(), "failover"));

  leader.process().Signal(SIGKILL);
  REQUIRE(leader.process().Wait(10s).has_value());
  CHECK(SaysItLeads(leader.process(), "failover"));
  auto [back, last] = job_running_at(survivor);
  INFO(last);
  INFO(agents[0]->stderr_text() + agents[1]->stderr_text());
  REQUIRE(back);  // the job and both nodes, running round 0 again, at the third daemon

  for (pid_t worker : workers) ::kill(worker, SIGTERM);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  for (auto& agent : agents) {
    INFO(agent->stdout_text() + agent->stderr_text());
    CHECK(Count(agent->stdout_text(), "]: ready ") == 1);  // never restarted
  }
  survivor.process().Signal(SIGTERM);
  REQUIRE(survivor.process().Wait(10s).has_value());  // its output is read to the end
  CHECK(SaysItLeads(survivor.process(), "failover"));
}

TEST_CASE("every daemon killed and started again at once while the job trains: the job goes on") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  std::vector<std::unique_ptr<Daemon>> daemons;
  for (int i = 0; i < 2; ++i) daemons.push_back(std::make_unique<Daemon>(OnEtcd(cluster)));
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (size_t first : {size_t{0}, size_t{1}}) {
    agents.push_back(StartAgent(
        {"--nnodes=2", "--nproc_per_node=1", "--rdzv_endpoint=" + EndpointsFrom(daemons, first),
         "--rdzv_id=restarted", QuickRendezvousFlag(30), kTestWorker, "wait-for-signal"}));
  }
  std::vector<pid_t> workers;
  for (auto& agent : agents) {
    auto line = agent->WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    INFO(agent->stderr_text());
    REQUIRE(line.has_value());
    workers.push_back(std::stoi(line->substr(line->rfind(' ') + 1)));
  }
  // Both at once, as a rolling upgrade gone wrong or a power cut of the control plane's hosts:
  // each killed, then each started again on its port.
  for (auto& daemon : daemons) daemon->process().Signal(SIGKILL);
  for (auto& daemon : daemons) daemon->Restart();
  // The job, both nodes in round 0, at one of the new daemons.
  bool back = false;
  std::string last;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!back && std::chrono::steady_clock::now() < deadline) {
    for (auto& daemon : daemons) {
      auto status = RunStatus({"--rdzv_endpoint=" + daemon->endpoint(), "--json"});
      last = status.out + status.err;
      back = back || (Count(status.out, "\"state\": \"running\"") == 3 &&
                      Count(status.out, "\"round\": 0") == 1);
    }
    if (!back) std::this_thread::sleep_for(20ms);
  }
  INFO(last << agents[0]->stderr_text() << agents[1]->stderr_text());
  REQUIRE(back);
  for (pid_t worker : workers) ::kill(worker, SIGTERM);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  for (auto& agent : agents) {
    INFO(agent->stdout_text() + agent->stderr_text());
    CHECK(Count(agent->stdout_text(), "]: ready ") == 1);  // never restarted
  }
}

}  // namespace
}  // namespace ddprun::testing
