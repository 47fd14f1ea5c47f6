// ddprun at a terminal behaves as the program would alone: a real pseudo-terminal (the test's)
// runs ddprun, whose workers then get pseudo-terminals of their own: progress bars and prompts
// show as they are written, C stdio is line-buffered, colours appear, the window's size follows,
// and what is typed reaches rank 0. With --tty=never, or when ddprun's output is not a terminal,
// workers get pipes as before.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "integration/launcher/launcher_test_support.h"
#include "support/skip.h"
#include "support/terminal_process.h"

using namespace ddprun::testing;

namespace {

// A named pipe the worker waits on: each Release lets it go on by one step. Held open for
// reading and writing here, so the worker's open never blocks.
struct Fifo {
  ScratchDir dir;
  std::string path = dir / "go_on";
  int fd = -1;
  Fifo() {
    REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
    fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    REQUIRE(fd >= 0);
  }
  ~Fifo() { ::close(fd); }
  void Release() { REQUIRE(::write(fd, "\n", 1) == 1); }
};

}  // namespace

TEST_CASE(
    "at a terminal, each worker's output is a terminal of the same size, and rank 0's "
    "input too") {
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=2", kTestWorker, "terminal"}), 30, 100);
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  const std::string screen = ddprun.screen();
  INFO(screen);
  CHECK(Count(screen, "[rank0]: stdin=1 stdout=1 stderr=1 rows=30 cols=100\n") == 1);
  CHECK(Count(screen, "[rank1]: stdin=0 stdout=1 stderr=1 rows=30 cols=100\n") == 1);
  CHECK(Count(screen, "]: \x1b[32mgreen\x1b[0m\n") == 2);  // colours, as isatty asks
}

TEST_CASE("with --tty=never workers get pipes, even at a terminal") {
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=1", "--tty=never", kTestWorker, "terminal"}));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  CHECK(Count(ddprun.screen(), "[rank0]: stdin=0 stdout=0 stderr=0") == 1);  // stdin: a pipe
  CHECK(Count(ddprun.screen(), "[rank0]: plain\n") == 1);
}

TEST_CASE("when ddprun's output is not a terminal, workers get pipes") {
  const auto run = Run(Ddprun({"--nproc_per_node=1", kTestWorker, "terminal"}));
  REQUIRE(run.code() == 0);
  CHECK(RankLines(run.out, 0) ==
        std::vector<std::string>{"stdin=0 stdout=0 stderr=0 rows=0 cols=0", "plain"});
}

TEST_CASE("at a terminal, a C program's stdio lines arrive one by one while it runs") {
  Fifo go_on;
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=1", kTestWorker, "stdio-lines", go_on.path}));
  // Each line must show while the program waits to write the next: block-buffered, none would
  // before the program ends.
  for (int line = 1; line <= 3; ++line) {
    REQUIRE(ddprun.WaitFor("[rank0]: stdio line " + std::to_string(line) + "\n", 10s));
    go_on.Release();
  }
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
}

TEST_CASE("a progress bar redrawn with carriage returns shows each state as it is drawn") {
  Fifo go_on;
  const std::string bar =
      "for i in 1 2 3 4 5; do printf '\\rprogress %d/5' $i; read x < \"$0\"; done; echo";
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=1", "/bin/sh", "-c", bar, go_on.path}));
  // Each state must show while the bar waits to draw the next: held until the line's end, none
  // would.
  for (int state = 1; state <= 5; ++state) {
    REQUIRE(ddprun.WaitFor("progress " + std::to_string(state) + "/5", 10s));
    go_on.Release();
  }
  REQUIRE(ddprun.Wait());
  // Each redraw (the first too: the bar starts with '\r') brings the prefix back, and the bar's
  // line ends once.
  CHECK(Count(ddprun.raw(), "\r[rank0]: progress ") == 5);
  CHECK(Count(ddprun.screen(), "progress 5/5\n") == 1);
}

TEST_CASE("a line typed at ddprun's terminal reaches rank 0's stdin, and only rank 0's") {
  const std::string script =
      "echo \"ready $RANK\"; if read line; then echo \"got $line\"; else echo \"end of input\"; fi";
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=2", "/bin/sh", "-c", script}));
  REQUIRE(ddprun.WaitFor("[rank0]: ready 0\n"));
  REQUIRE(ddprun.WaitFor("[rank1]: end of input\n"));  // rank 1 reads /dev/null
  ddprun.Type("hello there\n");
  REQUIRE(ddprun.WaitFor("[rank0]: got hello there\n"));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
}

TEST_CASE("pdb at breakpoint() on rank 0 is interactive at ddprun's terminal") {
  if (::access("/usr/bin/python3", X_OK) != 0) return SkipTest("no /usr/bin/python3 here");
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=2", "--no_python", "/usr/bin/python3", "-c",
                                 "import os\nx = 41\nif os.environ['RANK'] == '0': "
                                 "breakpoint()\nprint('after', x)"}));
  REQUIRE(ddprun.WaitFor("(Pdb) "));  // a prompt without a newline still shows
  ddprun.Type("p x + 1\n");
  REQUIRE(ddprun.WaitFor("[rank0]: 42\n[rank0]: (Pdb) "));  // the answer, then the next prompt
  ddprun.Type("c\n");
  REQUIRE(ddprun.WaitFor("[rank0]: after 41\n"));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
}

TEST_CASE("a worker's terminal follows the window when it is resized") {
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=1", kTestWorker, "window-change"}), 30, 100);
  REQUIRE(ddprun.WaitFor("[rank0]: size 30x100\n"));
  ddprun.Resize(40, 120);
  REQUIRE(ddprun.WaitFor("[rank0]: size 40x120\n"));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
}

TEST_CASE("at a terminal, --tee files hold what the worker wrote, with no terminal sequences") {
  ScratchDir logs;
  TerminalProcess ddprun(Ddprun({"--nproc_per_node=1", "--tee=3", "--log_dir=" + logs.path(),
                                 "--run_id=teed", "/bin/sh", "-c", "printf 'a\\nb\\n'"}));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  CHECK(ReadFile(logs.path() + "/teed/attempt_0/0/stdout.log") == "a\nb\n");
  CHECK(Count(ddprun.screen(), "[rank0]: a\n[rank0]: b\n") == 1);
}

TEST_CASE("with its own stdin closed, ddprun gives rank 0 /dev/null") {
  const auto run = Run({"/bin/sh", "-c", "exec \"$0\" --nproc_per_node=1 \"$1\" terminal <&-",
                        kDdprun, kTestWorker});
  REQUIRE(run.code() == 0);
  CHECK(RankLines(run.out, 0).front() == "stdin=0 stdout=0 stderr=0 rows=0 cols=0");
}

TEST_CASE(
    "at a terminal, ranks redrawing their lines beside another's output leave no empty line, and "
    "each rank's last state shows") {
  RedrawFolder folder;
  TerminalProcess ddprun(
      Ddprun({"--nproc_per_node=4", "/bin/sh", "-c", kRedrawingRanks, folder.path()}));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  CheckRedrawingRanks(ddprun.screen());
}

TEST_CASE(
    "at a terminal, a worker's stream is a terminal only where it reaches the console (with "
    "--redirects, --tee and --local_ranks_filter)") {
  // Each rank says, on both streams, which of its streams are terminals.
  const std::string script =
      "test -t 1 && o=tty || o=pipe; test -t 2 && e=tty || e=pipe; echo \"out $RANK $o $e\"; "
      "echo \"err $RANK $o $e\" >&2";
  struct Case {
    std::vector<std::string> flags;
    // What rank 0 and rank 1 say on a stream that is shown or written ("": shown nowhere).
    std::vector<std::string> seen;
  };
  const std::vector<Case> cases = {
      {{"--redirects=3"}, {"out 0 pipe pipe", "out 1 pipe pipe"}},
      {{"--redirects=1"}, {"err 0 pipe tty", "err 1 pipe tty"}},
      {{"--redirects=2"}, {"out 0 tty pipe", "out 1 tty pipe"}},
      {{"--redirects=0:3,1:0"}, {"out 0 pipe pipe", "out 1 tty tty"}},
      {{"--tee=3"}, {"out 0 tty tty", "out 1 tty tty"}},
      {{"--redirects=3", "--tee=1"}, {"out 0 tty pipe", "out 1 tty pipe"}},
      {{"--local_ranks_filter=0"}, {"out 0 tty tty", ""}},
      {{"--local_ranks_filter=0", "--tee=3"}, {"out 0 tty tty", "out 1 pipe pipe"}},
  };
  for (const auto& c : cases) {
    ScratchDir logs;
    std::vector<std::string> args = {"--nproc_per_node=2", "--log_dir=" + logs.path(),
                                     "--run_id=which"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    args.insert(args.end(), {"/bin/sh", "-c", script});
    TerminalProcess ddprun(Ddprun(args));
    auto exit = ddprun.Wait();
    REQUIRE(exit);
    REQUIRE(exit->exit_code == 0);
    const std::string screen = ddprun.screen();
    for (int rank = 0; rank < 2; ++rank) {
      INFO(c.flags.front() << (c.flags.size() > 1 ? " " + c.flags.back() : "") << ", rank " << rank
                           << "\n"
                           << screen);
      const std::string& seen = c.seen[static_cast<size_t>(rank)];
      if (seen.empty()) {
        CHECK(RankLines(screen, rank).empty());
        continue;
      }
      const std::string dir = logs.path() + "/which/attempt_0/" + std::to_string(rank);
      // On the console when it reaches it, else in the stream's log file.
      const bool on_console = Count(screen, "[rank" + std::to_string(rank) + "]: " + seen) == 1;
      const bool in_file =
          ReadFile(dir + (seen[0] == 'o' ? "/stdout.log" : "/stderr.log")).find(seen) !=
          std::string::npos;
      CHECK((on_console || in_file));
    }
  }
}
