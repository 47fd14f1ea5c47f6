// A partition of the control plane, over network namespaces (test_network.h): hosts 0-2 each run
// a ddprund on one etcd member at host 3; two agents of one job list every daemon. Host 0's
// daemon leads the job; a blackhole route then cuts host 0 off from etcd's host, and only from
// it: its daemon still reaches the agents, and they it. It must stop acting for the job by its
// own clock before its lease can end (docs/control_plane.md, invariant 1), another daemon takes
// the job once etcd has ended that lease, and the round the workers run stands: no worker is
// started again.
#include <signal.h>

#include "integration/multinode/host_daemon_support.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::testing {
namespace {

// The "[2026-12-05 17:11:12.345]" a log line starts with, or "" when it has none; stamps of one
// machine's clock compare as text.
std::string StampOf(const std::string& line) {
  const size_t end = line.find(']');
  return line.rfind('[', 0) == 0 && end != std::string::npos ? line.substr(0, end + 1) : "";
}

TEST_CASE(
    "a leader cut off from etcd but not from its agents stops acting before its lease ends, and "
    "the next leader's round stands") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  auto network = NetworkOrSkip(4);
  if (!network) return;
  EtcdCluster cluster({{.address = TestNetwork::address(3), .prefix = network->In(3)}});
  ScratchDir dir;
  const std::string token_file = dir / "token";
  WriteFile(token_file, "partition-token\n");
  std::vector<std::unique_ptr<Daemon>> daemons;
  std::string endpoints;
  for (int i = 0; i < 3; ++i) {
    daemons.push_back(std::make_unique<Daemon>(
        std::vector<std::string>{"--bind=0.0.0.0", "--token-file=" + token_file, "--store=etcd",
                                 "--etcd-endpoints=" + cluster.EndpointList()},
        network->In(i), 29400));
    endpoints += (i == 0 ? "" : ",") + TestNetwork::address(i) + ":29400";
  }
  // An agent on hosts 1 and 2, each listing daemon 0 first: it leads the job.
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int host : {1, 2}) {
    std::vector<std::string> argv = network->In(host);
    argv.insert(argv.end(),
                {kDdprun, "--nnodes=2", "--nproc_per_node=1", "--rdzv_endpoint=" + endpoints,
                 "--rdzv_id=partition", "--token-file=" + token_file, QuickRendezvousFlag(30),
                 kTestWorker, "wait-for-signal"});
    agents.push_back(std::make_unique<ChildProcess>(argv));
  }
  const std::vector<pid_t> workers = AwaitReadyWorkers(agents);
  ChildProcess& leader = daemons[0]->process();
  auto leads = leader.WaitForStderrLine(
      [](const std::string& l) { return l.find("leads job 'partition'") != std::string::npos; });
  INFO(leader.stderr_text() << daemons[1]->process().stderr_text()
                            << daemons[2]->process().stderr_text());
  REQUIRE(leads.has_value());

  REQUIRE(network->CutBetween(0, 3));
  auto gave_up = leader.WaitForStderrLine([](const std::string& l) {
    return l.find("no longer leads job 'partition'") != std::string::npos;
  });
  INFO(leader.stderr_text());
  REQUIRE(gave_up.has_value());
  // Another daemon leads the job, and it runs there as it ran: round 0, both nodes.
  std::string claim;
  auto [back, last] =
      AwaitStatus({"--rdzv_endpoint=" + endpoints, "--token-file=" + token_file, "--json"},
                  TwoNodesInRoundZero, network->In(-1));
  // Its log says so already: what is in its pipe is read within a moment.
  for (int i : {1, 2}) {
    auto line = daemons[static_cast<size_t>(i)]->process().WaitForStderrLine(
        [](const std::string& l) { return l.find("leads job 'partition'") != std::string::npos; },
        2s);
    if (line) claim = *line;
  }
  INFO(last << agents[0]->stderr_text() << agents[1]->stderr_text());
  CHECK(back);
  REQUIRE_FALSE(claim.empty());
  // By the machine's one clock: the old leader gave up before the new one could take the job.
  CHECK(StampOf(*gave_up) < StampOf(claim));

  EndWorkersStartedOnce(agents, workers);  // never started again
}

}  // namespace
}  // namespace ddprun::testing
