// A --hosts job over daemons that keep their rendezvous in one etcd (docs/control_plane.md): the
// submitter sees from the daemons' answers that they share a store and gives the agents every
// host's daemon, so the job outlives the host that served its rounds. Real etcd, real ddprund
// daemons on loopback ports of their own (each a "host": kill -9 of one takes its agent and
// workers with it), a real submitter. The same hosts on the in-memory store keep one daemon. And
// one job id submitted twice at once, to two daemons on one etcd, runs once.
#include <signal.h>

#include <algorithm>
#include <set>

#include "integration/multinode/host_daemon_support.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::testing {
namespace {

// Daemons that run jobs (as root, where the tests run as root), with one token, on `store`.
struct JobDaemons {
  JobDaemons(int count, const std::vector<std::string>& store) {
    WriteFile(token_file, "etcd-hosts-token\n");
    for (int i = 0; i < count; ++i) {
      std::vector<std::string> args = {"--token-file=" + token_file, "--allow-root-jobs",
                                       "--agent-program=" + kDdprun};
      args.insert(args.end(), store.begin(), store.end());
      daemons.push_back(std::make_unique<Daemon>(args));
    }
  }

  // "127.0.0.1:P0,127.0.0.1:P1,...".
  std::string hosts() const {
    std::string list;
    for (const auto& daemon : daemons) list += (list.empty() ? "" : ",") + daemon->endpoint();
    return list;
  }

  // `ddprun --hosts=... --nnodes=2 --rdzv_id=MARKER`: each rank says which round it runs, then
  // runs until stopped.
  std::unique_ptr<ChildProcess> Submit(const std::string& marker) const {
    return std::make_unique<ChildProcess>(std::vector<std::string>{
        kDdprun, "--token-file=" + token_file, "--hosts=" + hosts(), "--nnodes=2",
        "--rdzv_id=" + marker, QuickRendezvousFlag(30), "sh", "-c",
        "echo \"ready $RANK of $WORLD_SIZE in round $DDPRUN_ROUND\"; while :; do sleep 0.1; done",
        marker});
  }

  ScratchDir dir;
  std::string token_file = dir / "token";
  std::vector<std::unique_ptr<Daemon>> daemons;
};

// Every --rdzv_endpoint the job's agents were given.
std::set<std::string> RendezvousGiven(const std::string& marker) {
  std::set<std::string> given;
  const std::string flag = "--rdzv_endpoint=";
  for (const auto& [pid, unused] : ProcessesMentioning("--rdzv_id=" + marker)) {
    const std::string command = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    for (size_t at = command.find(flag); at != std::string::npos; at = command.find(flag, at + 1)) {
      if (at == 0 || command[at - 1] == '\0') {
        given.insert(command.substr(at + flag.size(), command.find('\0', at) - at - flag.size()));
      }
    }
  }
  return given;
}

TEST_CASE(
    "a --hosts job over daemons on one etcd outlives the host that served its rounds, a spare "
    "taking its place") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  JobDaemons hosts(3, {"--store=etcd", "--etcd-endpoints=" + cluster.EndpointList()});
  const std::string marker = "etcdhosts-" + std::to_string(::getpid());
  auto submitter = hosts.Submit(marker);
  REQUIRE(AwaitLines(*submitter, "ready ", 2));
  INFO(submitter->stdout_text() << submitter->stderr_text());
  CHECK(RendezvousGiven(marker) == std::set<std::string>{hosts.hosts()});

  // The first host's daemon serves the job's rounds: it goes, with its agent and workers.
  const std::string lost = hosts.daemons[0]->endpoint();
  hosts.daemons[0]->process().Signal(SIGKILL);
  REQUIRE(AwaitLines(*submitter, "ready ", 4));
  CHECK(Count(submitter->stdout_text(), " of 2 in round ") == 4);
  CHECK(Count(submitter->stderr_text(), "ddprun: started job " + marker + " on spare host " +
                                            hosts.daemons[2]->endpoint() + " in place of " +
                                            lost) == 1);

  InterruptSubmitter(*submitter, marker);
}

TEST_CASE("one job id submitted to two daemons on one etcd at once runs once") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  JobDaemons hosts(2, {"--store=etcd", "--etcd-endpoints=" + cluster.EndpointList()});
  const std::string marker = "twice-" + std::to_string(::getpid());
  // Two submitters, each to another daemon, at once: each a one-node job that runs until
  // cancelled, detached.
  std::vector<std::unique_ptr<ChildProcess>> submitters;
  for (const auto& daemon : hosts.daemons) {
    submitters.push_back(std::make_unique<ChildProcess>(std::vector<std::string>{
        kDdprun, "--token-file=" + hosts.token_file, "--hosts=" + daemon->endpoint(),
        "--rdzv_id=" + marker, "--detach", "sh", "-c", "while :; do sleep 0.1; done", marker}));
  }
  std::vector<int> codes;
  std::string said;
  size_t running_at = 0;
  for (size_t i = 0; i < submitters.size(); ++i) {
    auto exit = submitters[i]->Wait(60s);
    REQUIRE(exit.has_value());
    codes.push_back(exit->exit_code.value_or(-1));
    if (codes.back() == 0) running_at = i;
    said += submitters[i]->stdout_text() + submitters[i]->stderr_text();
  }
  INFO(said);
  std::sort(codes.begin(), codes.end());
  CHECK(codes == std::vector<int>{0, 1});
  CHECK(Count(said, "job " + marker + " runs already, submitted by another ddprun") == 1);
  CHECK(AwaitProcesses(marker, 1));

  // Cancelled where it runs, its record in etcd goes.
  ChildProcess cancel({kDdprun, "cancel", marker, "--host=" + hosts.daemons[running_at]->endpoint(),
                       "--token-file=" + hosts.token_file});
  auto cancelled = cancel.Wait(90s);
  INFO(cancel.stdout_text() << cancel.stderr_text());
  REQUIRE(cancelled.has_value());
  CHECK(AwaitNoProcesses(marker));
  // A new submission of the id starts (its rounds would find the old job's end kept at its
  // leader for a while, so it is cancelled once it has started).
  auto again = Run({kDdprun, "--token-file=" + hosts.token_file,
                    "--hosts=" + hosts.daemons[1 - running_at]->endpoint(), "--rdzv_id=" + marker,
                    "--detach", "sleep", "600"},
                   {}, 60s);
  INFO(again.out << again.err);
  CHECK(again.code() == 0);
  ChildProcess cancel_again({kDdprun, "cancel", marker,
                             "--host=" + hosts.daemons[1 - running_at]->endpoint(),
                             "--token-file=" + hosts.token_file});
  REQUIRE(cancel_again.Wait(90s).has_value());
  CHECK(AwaitNoProcesses(marker));
}

TEST_CASE("a --hosts job over daemons on the in-memory store keeps the first host's rendezvous") {
  JobDaemons hosts(2, {});
  const std::string marker = "memoryhosts-" + std::to_string(::getpid());
  auto submitter = hosts.Submit(marker);
  REQUIRE(AwaitLines(*submitter, "ready ", 2));
  INFO(submitter->stdout_text() << submitter->stderr_text());
  CHECK(RendezvousGiven(marker) == std::set<std::string>{hosts.daemons[0]->endpoint()});
  submitter->Signal(SIGINT);
  REQUIRE(submitter->Wait(60s).has_value());
  CHECK(AwaitNoProcesses(marker));
}

}  // namespace
}  // namespace ddprun::testing
