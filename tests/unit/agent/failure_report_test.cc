// The failure report and the exit status derived from it.
#include "ddprun/agent/failure_report.h"

#include <signal.h>

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {

WorkerFailure Failure(int rank, std::optional<int> code, std::optional<int> signal_number) {
  WorkerFailure failure;
  failure.time = std::chrono::system_clock::now();
  failure.host = "node7";
  failure.global_rank = rank;
  failure.local_rank = rank;
  failure.pid = 4242;
  failure.exit_code = code;
  failure.term_signal = signal_number;
  return failure;
}

}  // namespace

TEST_CASE("the exit status is the exit code, or 128 + the signal") {
  CHECK(ExitStatusOf(Failure(0, 3, std::nullopt)) == 3);
  CHECK(ExitStatusOf(Failure(0, std::nullopt, SIGKILL)) == 137);
  CHECK(DescribeExit(Failure(0, std::nullopt, SIGABRT)) == "signal SIGABRT (6)");
  CHECK(DescribeExit(Failure(0, 3, std::nullopt)) == "exit code 3");
}

TEST_CASE("the report names the root cause first, then the other failures") {
  auto root = Failure(3, 1, std::nullopt);
  root.error_file = "/logs/error.json";
  root.error_file_text = "{\"message\": \"boom\"}";
  auto other = Failure(5, std::nullopt, SIGSEGV);
  std::string report = FormatFailureReport("./train", {root, other}, 1, 1);
  const size_t root_at = report.find("Root cause");
  const size_t rank3_at = report.find("rank       : 3 (local_rank 3)");
  const size_t others_at = report.find("Other failures:");
  const size_t rank5_at = report.find("rank       : 5 (local_rank 5)");
  CHECK(report.find("./train FAILED") != std::string::npos);
  CHECK(report.find("restarts used: 1 of 1") != std::string::npos);
  CHECK(root_at < rank3_at);
  CHECK(rank3_at < others_at);
  CHECK(others_at < rank5_at);
  CHECK(report.find("host       : node7") != std::string::npos);
  CHECK(report.find("pid        : 4242") != std::string::npos);
  CHECK(report.find("error      : boom") != std::string::npos);
  CHECK(report.find("signal SIGSEGV (11)") != std::string::npos);
}

TEST_CASE("an error file in an unknown format is shown as written") {
  auto failure = Failure(0, 1, std::nullopt);
  failure.error_file = "/logs/error.json";
  failure.error_file_text = "CUDA error: an illegal memory access\nsecond line\n";
  std::string report = FormatFailureReport("./train", {failure}, 0, 0);
  CHECK(report.find("\n    CUDA error: an illegal memory access\n    second line\n") !=
        std::string::npos);
}
