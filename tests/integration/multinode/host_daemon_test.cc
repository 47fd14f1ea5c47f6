// Jobs started on many hosts from one command: `ddprun --hosts=...` asks each host's ddprund to
// run the job's node agent. Real daemons, one per network namespace; the submitter in the
// switch's namespace. Skipped, with the reason, where namespaces cannot be made.
#include "host_daemon_support.h"
#include "support/terminal_process.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

// A worker that says it is ready, then runs until stopped; `marker` names its processes.
std::vector<std::string> ReadyThenRun(const std::string& marker) {
  return {"sh", "-c", "echo ready $RANK; while :; do sleep 0.1; done", marker};
}

std::string Marker(const std::string& what) {
  return "hostjob-" + what + "-" + std::to_string(::getpid());
}

}  // namespace

TEST_CASE("a job on three hosts' daemons prints every rank's lines, complete and prefixed") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  auto submitter = hosts.Submitter(
      SubmitArgs(hosts, {"--nproc_per_node=2"},
                 {"sh", "-c",
                  "i=1; while [ $i -le 40 ]; do echo \"line $i of rank $RANK/$WORLD_SIZE\"; "
                  "echo \"err $i of rank $RANK\" >&2; i=$((i+1)); done"}));
  auto exit = submitter->Wait(120s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 0);
  for (int rank = 0; rank < 6; ++rank) {
    for (int i = 1; i <= 40; ++i) {
      const std::string r = std::to_string(rank), n = std::to_string(i);
      CHECK(Count(submitter->stdout_text(),
                  "[rank" + r + "]: line " + n + " of rank " + r + "/6\n") == 1);
      CHECK(Count(submitter->stderr_text(), "[rank" + r + "]: err " + n + " of rank " + r + "\n") ==
            1);
    }
  }
  CHECK(Lines(submitter->stdout_text()).size() == 240);
}

TEST_CASE("Ctrl-C on the submitter cancels the job on every host and leaves no process there") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  const std::string marker = Marker("ctrl-c");
  auto submitter = hosts.Submitter(SubmitArgs(hosts, {}, ReadyThenRun(marker)));
  REQUIRE(AwaitLines(*submitter, ": ready ", 3));
  submitter->Signal(SIGINT);
  auto exit = submitter->Wait(60s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 128 + SIGINT);
  CHECK(Count(submitter->stderr_text(), "ddprun: cancelling job") == 1);
  CHECK(AwaitNoProcesses(marker));
  CHECK(AwaitNoProcesses("--rdzv_id=" + marker));
}

TEST_CASE("ddprun cancel stops a detached job on every host, from another machine") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  const std::string marker = Marker("cancel");
  auto submitter =
      hosts.Submitter(SubmitArgs(hosts, {"--detach", "--rdzv_id=" + marker}, ReadyThenRun(marker)));
  auto exit = submitter->Wait(60s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 0);
  CHECK(submitter->stdout_text() == marker + "\n");
  // Each host's daemon has started its agent: its processes exist until cancelled.
  CHECK(ProcessesMentioning("--rdzv_id=" + marker).size() >= 3);
  auto cancelled = hosts.Command("cancel", {marker});
  INFO(cancelled.out << cancelled.err);
  CHECK(cancelled.code() == 0);
  CHECK(AwaitNoProcesses(marker, nullptr, -1, 5s));
  auto status = hosts.Command("status", {marker});
  INFO(status.out << status.err);
  CHECK(status.code() == 0);
  CHECK(Count(status.out, "ended") == 3);
  CHECK(Count(status.out, "(cancelled)") == 3);
}

TEST_CASE("a detached job shows, on attach, the whole output and the job's exit code") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  const std::string id = Marker("attach");
  // Each rank marks, in a folder every namespace sees, that it wrote its lines; rank 1 fails
  // once all three have.
  ScratchDir marks;
  auto submitter = hosts.Submitter(
      SubmitArgs(hosts, {"--detach", "--rdzv_id=" + id},
                 {"sh", "-c",
                  "i=0; while [ $i -lt 20 ]; do echo \"out $i\"; i=$((i+1)); done; "
                  "touch \"$0/$RANK\"; [ \"$RANK\" = 1 ] || exec sleep 30; "
                  "until [ -e \"$0/0\" ] && [ -e \"$0/2\" ]; do sleep 0.01; done; exit 7",
                  marks.path()}));
  auto detached = submitter->Wait(60s);
  REQUIRE(detached.has_value());
  REQUIRE(detached->exit_code == 0);
  auto attached = hosts.Command("attach", {id});
  INFO(attached.out << attached.err);
  CHECK(attached.code() == 7);
  for (int rank = 0; rank < 3; ++rank) {
    for (int i = 0; i < 20; ++i) {
      CHECK(Count(attached.out,
                  "[rank" + std::to_string(rank) + "]: out " + std::to_string(i) + "\n") == 1);
    }
  }
  // One report, from the host whose worker failed, naming it.
  CHECK(Count(attached.err, " FAILED\n") == 1);
  CHECK(Count(attached.err, "  host       : " + ThisHostName() + " (10.77.0.") == 1);
  CHECK(Count(attached.err, "exit code 7") >= 1);
  // Attaching again after the end replays the same.
  auto again = hosts.Command("attach", {id});
  CHECK(again.code() == 7);
  CHECK(Count(again.out, "[rank2]: out 19\n") == 1);
  auto rank_logs = hosts.Command("logs", {id, "--rank=2"});
  CHECK(rank_logs.code() == 0);
  CHECK(Lines(rank_logs.out).size() == 20);
  CHECK(Count(rank_logs.out, "[rank2]: ") == 20);
}

TEST_CASE("a host that lacks the working directory fails the start on every host") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  ScratchDir work;
  // Host 1's daemon sees an empty file system over the working directory's place.
  HostDaemons hosts(std::move(*network), 3,
                    {{1,
                      {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                       "mount -t tmpfs none '" + work.path() + "' && exec \"$0\" \"$@\""}}});
  const std::string workdir = work / "job";
  REQUIRE(::mkdir(workdir.c_str(), 0755) == 0);
  const std::string touched = hosts.dir / "started";
  auto submitter =
      hosts.Submitter(SubmitArgs(hosts, {}, {"sh", "-c", "touch \"$0\"", touched}), "", workdir);
  auto exit = submitter->Wait(60s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 1);
  CHECK(Count(submitter->stderr_text(), "host " + TestNetwork::address(1) + ":29400: ") == 1);
  CHECK(Count(submitter->stderr_text(), "working directory " + workdir + " does not exist") == 1);
  CHECK(Count(submitter->stderr_text(), "nothing was started") == 1);
  CHECK(ReadFile(touched).empty());
  CHECK(::access(touched.c_str(), F_OK) != 0);
  for (int i = 0; i < 3; ++i) {
    auto status = hosts.Command("status", {"--host=" + TestNetwork::address(i)});
    CHECK(Count(status.out, "no jobs on") == 1);
  }
}

TEST_CASE("a wrong token starts nothing, and the daemons serve the next job") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 2);
  WriteFile(hosts.dir / "wrong", "not-the-token\n");
  auto refused = hosts.Submitter(SubmitArgs(hosts, {}, {"true"}), hosts.dir / "wrong");
  auto exit = refused->Wait(60s);
  INFO(refused->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 1);
  CHECK(Count(refused->stderr_text(), "wrong one") == 1);
  auto status = hosts.Command("status", {});
  CHECK(Count(status.out, "no jobs on") == 1);
  auto served = hosts.Submitter(SubmitArgs(hosts, {}, {"sh", "-c", "echo served $RANK"}));
  auto served_exit = served->Wait(60s);
  INFO(served->stdout_text() << served->stderr_text());
  REQUIRE(served_exit.has_value());
  CHECK(served_exit->exit_code == 0);
  CHECK(Count(served->stdout_text(), "served") == 2);
}

TEST_CASE(
    "a host daemon killed mid-job takes its workers along, and a fixed-size job without a "
    "spare ends at once, naming the lost host") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  const std::string marker = Marker("lost");
  // Default timeouts: the job must not wait the 600 s of join_timeout for a third node.
  auto submitter = hosts.Submitter({"--hosts=" + hosts.hosts(), "sh", "-c",
                                    "echo ready $RANK; while :; do sleep 0.1; done", marker});
  REQUIRE(AwaitLines(*submitter, ": ready ", 3));
  hosts.daemons[2]->process().Signal(SIGKILL);
  // Its agent and workers die with it at once: no orphans on that host.
  CHECK(AwaitNoProcesses(marker, &hosts.network, 2, 5s));
  auto exit = submitter->Wait(60s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 1);
  const std::string lost = TestNetwork::address(2) + ":29400";
  CHECK(Count(submitter->stderr_text(),
              "ddprun: lost host " + lost + ": the connection to its ddprund broke") == 1);
  CHECK(Count(submitter->stderr_text(),
              "cannot go on: it needs 3 nodes, 2 are left after losing "
              "host " +
                  lost + ", and no spare host is left") == 1);
  CHECK(AwaitNoProcesses(marker));
}

TEST_CASE("input piped into the submitter reaches rank 0, whichever host runs it") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 3);
  hosts.submitter_prefix = {"/bin/sh", "-c", "echo across hosts | exec \"$0\" \"$@\""};
  auto submitter = hosts.Submitter(SubmitArgs(
      hosts, {}, {"/bin/sh", "-c", "if read line; then echo \"got $line\"; else echo none; fi"}));
  auto exit = submitter->Wait(60s);
  INFO(submitter->stdout_text() << submitter->stderr_text());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 0);
  CHECK(Count(submitter->stdout_text(), "[rank0]: got across hosts\n") == 1);
  CHECK(Count(submitter->stdout_text(), "[rank1]: none\n") == 1);
  CHECK(Count(submitter->stdout_text(), "[rank2]: none\n") == 1);
}

TEST_CASE("at a terminal, the workers' terminals on every host follow the submitter's resizes") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  HostDaemons hosts(std::move(*network), 2);
  std::vector<std::string> argv = hosts.network.In(-1);
  argv.insert(argv.end(), {kDdprun, "--token-file=" + hosts.token_file, "--hosts=" + hosts.hosts(),
                           kTestWorker, "window-change"});
  TerminalProcess submitter(argv, 30, 100);
  REQUIRE(submitter.WaitFor("[rank0]: size 30x100\n"));
  REQUIRE(submitter.WaitFor("[rank1]: size 30x100\n"));
  submitter.Resize(40, 120);
  INFO(submitter.screen());
  CHECK(submitter.WaitFor("[rank0]: size 40x120\n"));
  CHECK(submitter.WaitFor("[rank1]: size 40x120\n"));
  auto exit = submitter.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
}
