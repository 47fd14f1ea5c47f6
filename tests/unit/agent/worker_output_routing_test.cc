// OutputRouter: each stream goes to the console with the rank's prefix, to its log file, or
// both, as --redirects, --tee and --local_ranks_filter say; a log file that cannot be opened
// falls back to the console. Real pipes, real files, a real io_context.
#include "ddprun/agent/worker_output_routing.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "support/child_process.h"

using namespace ddprun;
using ddprun::testing::ReadFile;
using ddprun::testing::ScratchDir;

namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    read_end = fds[0];
    write_end = fds[1];
  }
};

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  return text;
}

// One worker (local rank 1, global rank 5) writes a line to each stream and exits; returns
// what reached the console's stdout and stderr.
std::pair<std::string, std::string> RouteOneWorker(OutputRoutingOptions options,
                                                   const std::string& log_dir) {
  Pipe console_out, console_err, worker_out, worker_err;
  options.console_stdout = console_out.write_end;
  options.console_stderr = console_err.write_end;
  boost::asio::io_context io;
  OutputRouter router(io, options);
  SpawnedWorker spawned;
  spawned.stdout_fd = worker_out.read_end;
  spawned.stderr_fd = worker_err.read_end;
  WorkerOutput output =
      router.Route(1, 5, spawned, SpawnOptions{}, log_dir + "/stdout.log", log_dir + "/stderr.log");
  REQUIRE(::write(worker_out.write_end, "to stdout\n", 10) == 10);
  REQUIRE(::write(worker_err.write_end, "to stderr\n", 10) == 10);
  ::close(worker_out.write_end);
  ::close(worker_err.write_end);
  io.run();  // the pumps read to the end of both pipes
  output.Finish();
  ::close(console_out.write_end);
  ::close(console_err.write_end);
  return {ReadAll(console_out.read_end), ReadAll(console_err.read_end)};
}

}  // namespace

TEST_CASE("by default both streams go to the console, prefixed with the global rank") {
  ScratchDir dir;
  auto [out, err] = RouteOneWorker({}, dir.path());
  CHECK(out == "[rank5]: to stdout\n");
  CHECK(err == "[rank5]: to stderr\n");
  CHECK_FALSE(std::ifstream(dir / "stdout.log").good());
}

TEST_CASE(
    "with --redirects a stream goes to its file only, with --tee to its file and the console") {
  ScratchDir dir;
  OutputRoutingOptions options;
  options.redirects.by_local_rank[1] = StdStreams::kStdout;
  options.tee.all = StdStreams::kStderr;
  auto [out, err] = RouteOneWorker(options, dir.path());
  CHECK(out.empty());
  CHECK(ReadFile(dir / "stdout.log") == "to stdout\n");  // the bytes as written, no prefix
  CHECK(err == "[rank5]: to stderr\n");
  CHECK(ReadFile(dir / "stderr.log") == "to stderr\n");
}

TEST_CASE(
    "with --local_ranks_filter other ranks are hidden from the console, not from their files") {
  ScratchDir dir;
  OutputRoutingOptions options;
  options.local_ranks_filter = std::set<int>{0};
  options.tee.all = StdStreams::kBoth;
  auto [out, err] = RouteOneWorker(options, dir.path());
  CHECK(out.empty());
  CHECK(err.empty());
  CHECK(ReadFile(dir / "stdout.log") == "to stdout\n");
}

TEST_CASE("a log file that cannot be opened falls back to the console: nothing is dropped") {
  ScratchDir dir;
  OutputRoutingOptions options;
  options.redirects.all = StdStreams::kBoth;
  // A regular file where the log directory should be: the logs cannot be opened, even by root.
  { std::ofstream(dir / "a-file") << "x"; }
  auto [out, err] = RouteOneWorker(options, dir / "a-file");
  CHECK(out == "[rank5]: to stdout\n");
  CHECK(err == "[rank5]: to stderr\n");
}
