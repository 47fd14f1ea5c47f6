// Signals to ddprun reach every worker; shutdown is bounded; killing ddprun kills its workers.
#include <signal.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

namespace {

// Waits until `count` workers printed "ready <pid>"; returns their pids.
std::vector<pid_t> WaitForReadyWorkers(ChildProcess& ddprun, int count) {
  std::vector<pid_t> pids;
  for (int i = 0; i < count; ++i) {
    auto line = ddprun.WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    if (!line) break;
    pids.push_back(std::stoi(line->substr(line->find("ready ") + 6)));
  }
  return pids;
}

}  // namespace

TEST_CASE("SIGTERM, SIGINT, SIGHUP and SIGQUIT to ddprun reach every worker: ddprun exits 128+N") {
  for (int signal_number : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
    DYNAMIC_SECTION("signal " << sigabbrev_np(signal_number)) {
      ChildProcess ddprun(
          Ddprun({"--standalone", "--nproc_per_node=3", kTestWorker, "wait-for-signal"}));
      REQUIRE(WaitForReadyWorkers(ddprun, 3).size() == 3);
      ddprun.Signal(signal_number);
      auto exit = ddprun.Wait();
      REQUIRE(exit);
      CHECK(exit->exit_code == 128 + signal_number);
      const std::string got = std::string("got SIG") + sigabbrev_np(signal_number);
      for (int rank = 0; rank < 3; ++rank) {
        auto lines = RankLines(ddprun.stdout_text(), rank);
        CHECK(std::count(lines.begin(), lines.end(), got) == 1);
      }
    }
  }
}

TEST_CASE("a worker that ignores SIGTERM is killed after --shutdown_timeout") {
  ChildProcess ddprun(Ddprun({"--standalone", "--nproc_per_node=2", "--shutdown_timeout=0.2",
                              kTestWorker, "ignore-term"}));
  auto pids = WaitForReadyWorkers(ddprun, 2);
  REQUIRE(pids.size() == 2);
  ddprun.Signal(SIGTERM);
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 128 + SIGTERM);
  CHECK(Count(ddprun.stderr_text(), "sending SIGKILL") == 1);
  for (pid_t pid : pids) CHECK(WaitForProcessGone(pid, std::chrono::seconds(10)));
}

TEST_CASE("kill -9 of ddprun leaves no worker alive") {
  ChildProcess ddprun(Ddprun({"--standalone", "--nproc_per_node=4", kTestWorker, "ignore-term"}));
  auto pids = WaitForReadyWorkers(ddprun, 4);
  REQUIRE(pids.size() == 4);
  ddprun.Signal(SIGKILL);
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->term_signal == SIGKILL);
  for (pid_t pid : pids) CHECK(WaitForProcessGone(pid, std::chrono::seconds(10)));
}

TEST_CASE("a worker that exits 0 while the others run does not end the job") {
  ChildProcess ddprun(Ddprun({"--standalone", "--nproc_per_node=3", kTestWorker, "rank0-exits"}));
  std::map<int, pid_t> pids;  // by rank, from "[rankR]: ready <pid>"
  for (int i = 0; i < 3; ++i) {
    auto line = ddprun.WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    REQUIRE(line);
    pids[std::stoi(line->substr(5))] = std::stoi(line->substr(line->find("ready ") + 6));
  }
  REQUIRE(pids.size() == 3);
  // Gone means reaped: by then ddprun has seen the exit and done whatever it does about it.
  REQUIRE(WaitForProcessGone(pids[0], std::chrono::seconds(10)));
  // The others are released by the test with SIGHUP; had ddprun stopped the group on rank 0's
  // exit, they would have got its SIGTERM first.
  for (int rank : {1, 2}) REQUIRE(::kill(pids[rank], SIGHUP) == 0);
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  for (int rank : {1, 2}) {
    const std::vector<std::string> expected = {"ready " + std::to_string(pids[rank]), "got SIGHUP"};
    CHECK(RankLines(ddprun.stdout_text(), rank) == expected);
  }
}

TEST_CASE("SIGUSR1 and SIGUSR2 to ddprun reach every worker, and the job runs on") {
  // Each worker traps both: USR1 is a checkpoint request (it goes on), USR2 ends it with 0.
  ChildProcess ddprun(
      Ddprun({"--standalone", "--nproc_per_node=2", "--no_python", "/bin/sh", "-c",
              "trap 'echo got USR1' USR1; trap 'echo got USR2; exit 0' USR2; echo ready $$; "
              "while :; do sleep 0.05; done"}));
  REQUIRE(WaitForReadyWorkers(ddprun, 2).size() == 2);
  ddprun.Signal(SIGUSR1);
  // Both ranks' lines, in whichever order they come.
  REQUIRE(ddprun.WaitForStdoutLine([&ddprun](const std::string&) {
    return Count(ddprun.stdout_text(), "[rank0]: got USR1") == 1 &&
           Count(ddprun.stdout_text(), "[rank1]: got USR1") == 1;
  }));
  ddprun.Signal(SIGUSR1);  // again: still running, still forwarded
  ddprun.Signal(SIGUSR2);
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  for (int rank = 0; rank < 2; ++rank) {
    auto lines = RankLines(ddprun.stdout_text(), rank);
    CHECK(std::count(lines.begin(), lines.end(), "got USR2") == 1);
    CHECK(std::count(lines.begin(), lines.end(), "got USR1") >= 1);
  }
}

TEST_CASE("after SIGTERM each worker gets the whole --shutdown_timeout, not a share of it") {
  // Preemption: three workers each need 1 s to save their state; with a 2 s timeout all three
  // finish (a budget shared by the node would have run out before the third).
  ChildProcess ddprun(Ddprun({"--standalone", "--nproc_per_node=3", "--shutdown_timeout=2",
                              "--no_python", "/bin/sh", "-c",
                              "trap 'sleep 1; echo saved; exit 0' TERM; echo ready $$; "
                              "while :; do sleep 0.05; done"}));
  REQUIRE(WaitForReadyWorkers(ddprun, 3).size() == 3);
  ddprun.Signal(SIGTERM);
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 128 + SIGTERM);
  for (int rank = 0; rank < 3; ++rank) {
    auto lines = RankLines(ddprun.stdout_text(), rank);
    CHECK(std::count(lines.begin(), lines.end(), "saved") == 1);
  }
  CHECK(Count(ddprun.stderr_text(), "sending SIGKILL") == 0);
}
