// Agents that fail over between daemons on one etcd cluster (docs/control_plane.md): real etcd
// members, real ddprund daemons with --store=etcd, real agents given every daemon in
// --rdzv_endpoint, real workers. One daemon leads the job; after its kill -9 the agents re-join
// another, which takes the job's lead once the dead one's lease has run out, and the workers are
// not restarted: the job's membership did not change. A daemon that leads nothing is not missed;
// neither every daemon killed and started again at once, nor etcd without a quorum for a while,
// costs the workers anything.
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

// Two agents of one job, one worker each that runs until signalled; each agent lists every
// daemon, starting with another one: without one leader per job, two daemons would each hold half
// of the job and neither half could form a round.
struct TwoNodeJob {
  TwoNodeJob(const std::vector<std::unique_ptr<Daemon>>& daemons, const std::string& job) {
    for (size_t first : {size_t{0}, size_t{1}}) {
      agents.push_back(StartAgent(
          {"--nnodes=2", "--nproc_per_node=1", "--rdzv_endpoint=" + EndpointsFrom(daemons, first),
           "--rdzv_id=" + job, QuickRendezvousFlag(30), kTestWorker, "wait-for-signal"}));
    }
    workers = AwaitReadyWorkers(agents);
  }

  void EndUnrestarted() { EndWorkersStartedOnce(agents, workers); }

  std::string AgentsStderr() const { return agents[0]->stderr_text() + agents[1]->stderr_text(); }

  std::vector<std::unique_ptr<ChildProcess>> agents;
  std::vector<pid_t> workers;
};

// Whether one of `daemons` shows the job and both its nodes running round 0, asked until one does
// or 60 s have passed; with the last answer.
std::pair<bool, std::string> AwaitRoundZeroAtOneOf(const std::vector<Daemon*>& daemons) {
  std::string endpoints;
  for (Daemon* daemon : daemons) endpoints += (endpoints.empty() ? "" : ",") + daemon->endpoint();
  return AwaitStatus({"--rdzv_endpoint=" + endpoints, "--json"}, TwoNodesInRoundZero);
}

TEST_CASE(
    "kill -9 of a daemon that leads nothing changes nothing, and kill -9 of the one leading the "
    "job "
    "makes its agents re-join another daemon on the same etcd, and the workers run on") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  std::vector<std::unique_ptr<Daemon>> daemons;
  for (int i = 0; i < 3; ++i) daemons.push_back(std::make_unique<Daemon>(OnEtcd(cluster)));
  TwoNodeJob job(daemons, "failover");
  // One daemon acts for the job; the others do not run it.
  std::vector<size_t> running;
  for (size_t i = 0; i < daemons.size(); ++i) {
    if (RunsJob(*daemons[i], "failover")) running.push_back(i);
  }
  REQUIRE(running.size() == 1);
  // Its round is in etcd, recorded before the agents heard of it (invariant 2).
  const v1::JobRecord recorded = cluster.JobRecordOf("failover");
  CHECK(recorded.state() == v1::JobRecord::RUNNING);
  CHECK(recorded.round() == 0);
  CHECK(recorded.members_size() == 2);
  Daemon& leader = *daemons[running[0]];
  Daemon& bystander = *daemons[(running[0] + 1) % 3];
  Daemon& survivor = *daemons[(running[0] + 2) % 3];

  bystander.process().Signal(SIGKILL);
  REQUIRE(bystander.process().Wait(10s).has_value());
  auto [unchanged, before] = AwaitRoundZeroAtOneOf({&leader});
  INFO(before);
  CHECK(unchanged);
  CHECK_FALSE(SaysItLeads(bystander.process(), "failover"));

  leader.process().Signal(SIGKILL);
  REQUIRE(leader.process().Wait(10s).has_value());
  CHECK(SaysItLeads(leader.process(), "failover"));
  auto [back, last] = AwaitRoundZeroAtOneOf({&survivor});
  INFO(last << job.AgentsStderr());
  REQUIRE(back);

  job.EndUnrestarted();
  survivor.process().Signal(SIGTERM);
  REQUIRE(survivor.process().Wait(10s).has_value());  // its output is read to the end
  CHECK(SaysItLeads(survivor.process(), "failover"));
}

TEST_CASE("every daemon killed and started again at once while the job trains: the job goes on") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  std::vector<std::unique_ptr<Daemon>> daemons;
  for (int i = 0; i < 2; ++i) daemons.push_back(std::make_unique<Daemon>(OnEtcd(cluster)));
  TwoNodeJob job(daemons, "restarted");
  // Both at once, as a rolling upgrade gone wrong or a power cut of the control plane's hosts:
  // each killed, then each started again on its port.
  for (auto& daemon : daemons) daemon->process().Signal(SIGKILL);
  for (auto& daemon : daemons) daemon->Restart();
  auto [back, last] = AwaitRoundZeroAtOneOf({daemons[0].get(), daemons[1].get()});
  INFO(last << job.AgentsStderr());
  REQUIRE(back);
  job.EndUnrestarted();
}

TEST_CASE("two of three etcd members lost while the job trains: no worker is stopped") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(3);
  std::vector<std::unique_ptr<Daemon>> daemons;
  for (int i = 0; i < 2; ++i) daemons.push_back(std::make_unique<Daemon>(OnEtcd(cluster)));
  TwoNodeJob job(daemons, "quorum");
  std::vector<Daemon*> leading;
  for (auto& daemon : daemons) {
    if (RunsJob(*daemon, "quorum")) leading.push_back(daemon.get());
  }
  REQUIRE(leading.size() == 1);
  // Without a quorum the leader's lease cannot be renewed: it stops acting for the job (its log
  // says so) while the workers run on.
  cluster.Kill(0);
  cluster.Kill(1);
  auto gave_up = leading[0]->process().WaitForStderrLine([](const std::string& l) {
    return l.find("no longer leads job 'quorum'") != std::string::npos;
  });
  INFO(leading[0]->process().stderr_text());
  REQUIRE(gave_up.has_value());
  for (pid_t worker : job.workers) CHECK(::kill(worker, 0) == 0);
  // A quorum again: the job, as it was, at one of the daemons.
  cluster.Restart(0);
  auto [back, last] = AwaitRoundZeroAtOneOf({daemons[0].get(), daemons[1].get()});
  INFO(last << job.AgentsStderr());
  REQUIRE(back);
  job.EndUnrestarted();
}

}  // namespace
}  // namespace ddprun::testing
