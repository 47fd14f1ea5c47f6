// A failure is captured as it is seen: rank, host, pid, how the worker ended, and what it wrote
// to its error file.
#include "failure_capture.h"

#include <signal.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "support/child_process.h"

using namespace ddprun;
using ddprun::testing::ScratchDir;

namespace {

FailedWorker Rank3(const std::string& error_file) {
  FailedWorker worker;
  worker.placement.local_rank = 1;
  worker.placement.global_rank = 3;
  worker.pid = 4242;
  worker.error_file = error_file;
  worker.host = "h1";
  return worker;
}

}  // namespace

TEST_CASE("an exit code is captured with the error file the worker wrote") {
  ScratchDir dir;
  std::ofstream(dir / "error.json") << R"({"message": "boom"})";
  const WorkerFailure failure = CaptureExitFailure(Rank3(dir / "error.json"), W_EXITCODE(3, 0));
  CHECK(failure.exit_code == 3);
  CHECK_FALSE(failure.term_signal);
  CHECK(failure.global_rank == 3);
  CHECK(failure.local_rank == 1);
  CHECK(failure.pid == 4242);
  CHECK(failure.host == "h1");
  CHECK(failure.error_file_text == R"({"message": "boom"})");
  CHECK(ExitStatusOf(failure) == 3);
}

TEST_CASE("a signal is captured by number, and a missing error file is no error") {
  ScratchDir dir;
  const WorkerFailure failure = CaptureExitFailure(Rank3(dir / "none.json"), SIGSEGV);
  CHECK(failure.term_signal == SIGSEGV);
  CHECK(failure.error_file_text.empty());
  CHECK(ExitStatusOf(failure) == 128 + SIGSEGV);
  CHECK(DescribeFailure(failure) == "rank 3 (local_rank 1) on host h1: signal SIGSEGV (11)");
}

TEST_CASE("an error file larger than the limit is cut at the limit") {
  ScratchDir dir;
  std::ofstream(dir / "error.json") << std::string(kErrorFileLimit + 100, 'x');
  CHECK(CaptureExitFailure(Rank3(dir / "error.json"), W_EXITCODE(1, 0)).error_file_text.size() ==
        kErrorFileLimit);
}

TEST_CASE("a worker that could not start is captured with the reason") {
  const WorkerFailure failure =
      CaptureSpawnFailure(Rank3(""), InternalError("exec ./train: Permission denied"));
  CHECK(failure.spawn_error == "exec ./train: Permission denied");
  CHECK(ExitStatusOf(failure) == 1);
}
