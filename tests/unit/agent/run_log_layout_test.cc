// RunLogLayout: torchrun's layout for logs a user asked for, and the flat one for a temporary
// directory that holds only error and progress files.
#include "ddprun/agent/run_log_layout.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "support/child_process.h"

using namespace ddprun;
using ddprun::testing::ScratchDir;

TEST_CASE(
    "a claimed run directory has torchrun's layout with one directory per worker and attempt") {
  ScratchDir dir;
  auto layout = RunLogLayout::Claim(dir.path(), "job");
  REQUIRE(layout.ok());
  CHECK_FALSE(layout->flat());
  REQUIRE(layout->PrepareWorkerDir(1, 3).ok());
  CHECK(std::filesystem::is_directory(dir / "job/attempt_1/3"));
  CHECK(layout->ErrorFile(1, 3) == dir / "job/attempt_1/3/error.json");
  CHECK(layout->ProgressFile(1, 3) == dir / "job/attempt_1/3/progress");
  CHECK(layout->StdoutLog(1, 3) == dir / "job/attempt_1/3/stdout.log");
}

TEST_CASE(
    "the flat layout makes no directory and every worker's files are in the one it is given") {
  ScratchDir dir;
  const RunLogLayout layout = RunLogLayout::Flat(dir.path());
  CHECK(layout.flat());
  REQUIRE(layout.PrepareWorkerDir(2, 0).ok());
  CHECK(std::filesystem::is_empty(dir.path()));
  CHECK(layout.ErrorFile(2, 0) == dir / "attempt_2.0.error.json");
  CHECK(layout.ProgressFile(2, 0) == dir / "attempt_2.0.progress");
  CHECK(layout.WorkerDir(2, 0) == dir.path());
}
