// Spare hosts of a --hosts job: hosts listed beyond --nnodes wait; when a running host is lost
// (its ddprund killed, its agent and workers with it), the submitter starts the job's agent on a
// spare at once and the next round forms with it. Default rendezvous timeouts throughout.
#include <signal.h>

#include <catch2/catch.hpp>

#include "host_daemon_support.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

// Each rank says where it runs (its namespace's address), then runs until stopped.
std::vector<std::string> ReportHostThenRun(const std::string& marker) {
  return {"sh", "-c",
          "echo \"ready $RANK of $WORLD_SIZE in round $DDPRUN_ROUND on $(ip -4 -o addr show "
          "scope global | awk '{print $4}' | cut -d/ -f1)\"; while :; do sleep 0.1; done",
          marker};
}

}  // namespace

TEST_CASE("a spare host takes a lost host's place in a --hosts job, with default timeouts") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  const std::string marker = "hostjob-spare-" + std::to_string(::getpid());
  std::vector<std::string> args = {"--hosts=" + hosts.hosts(), "--nnodes=2", "--rdzv_id=" + marker};
  for (const std::string& arg : ReportHostThenRun(marker)) args.push_back(arg);
  auto submitter = hosts.Submitter(args);
  REQUIRE(AwaitLines(*submitter, "ready ", 2));
  INFO(submitter->stdout_text() << submitter->stderr_text());
  // The spare runs nothing of the job until it is needed.
  CHECK(AwaitNoProcesses(marker, &hosts.network, 2, 1s));
  CHECK(Count(submitter->stdout_text(), " on " + TestNetwork::address(2)) == 0);

  hosts.daemons[1]->process().Signal(SIGKILL);
  const std::string lost = TestNetwork::address(1) + ":29400";
  const std::string spare = TestNetwork::address(2) + ":29400";
  // Both ranks run again, one of them on the spare.
  REQUIRE(AwaitLines(*submitter, "ready ", 4));
  CHECK(Count(submitter->stdout_text(), " of 2 in round ") == 4);
  CHECK(Count(submitter->stdout_text(), " on " + TestNetwork::address(2) + "\n") == 1);
  CHECK(Count(submitter->stderr_text(),
              "ddprun: lost host " + lost + ": the connection to its ddprund broke") == 1);
  CHECK(Count(submitter->stderr_text(), "ddprun: started job " + marker + " on spare host " +
                                            spare + " in place of " + lost) == 1);
  CHECK(AwaitNoProcesses(marker, &hosts.network, 1, 5s));

  InterruptSubmitter(*submitter, marker);
}

TEST_CASE("spare hosts need a submitter that follows the job") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 2);
  auto submitter = hosts.Submitter({"--hosts=" + hosts.hosts(), "--nnodes=1", "--detach", "true"});
  auto exit = submitter->Wait(60s);
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 2);
  CHECK(submitter->stderr_text().find("--detach leaves no one to start the spare hosts") !=
        std::string::npos);
}
