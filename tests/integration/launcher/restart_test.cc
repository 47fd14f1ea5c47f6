// Restarts: the whole group, counted, with the count in the workers' environment.
#include <catch2/catch.hpp>
#include <filesystem>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

TEST_CASE("a failed worker restarts the whole group with TORCHELASTIC_RESTART_COUNT incremented") {
  auto result = Run(Ddprun(
      {"--standalone", "--nproc_per_node=3", "--max_restarts=1", kTestWorker, "fail-once", "7"}));
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  for (int rank = 0; rank < 3; ++rank) {
    auto lines = RankLines(result.out, rank);
    CHECK(std::count(lines.begin(), lines.end(), "started attempt 1") == 1);
  }
  // Ranks 0 and 2 were stopped by ddprun for the restart (they print what stopped them).
  CHECK(Count(result.out, "got SIGTERM") == 2);
  CHECK(Count(result.err, "restarting the workers: worker failure: rank 1 (local_rank 1)") == 1);
  CHECK(Count(result.err, "(restart 1 of 1)") == 1);
}

TEST_CASE("the flag --max_restarts counts failures: N restarts, then ddprun gives up") {
  ScratchDir logs;
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=2", "--max_restarts=2",
                  "--log_dir=" + logs.path(), "--run_id=giveup", kTestWorker, "exit", "1", "9"}));
  REQUIRE(result.code() == 9);
  CHECK(Count(result.err, "restart 1 of 2") == 1);
  CHECK(Count(result.err, "restart 2 of 2") == 1);
  CHECK(Count(result.err, "restarts used: 2 of 2") == 1);
  for (int attempt = 0; attempt < 3; ++attempt) {
    CHECK(
        std::filesystem::exists(logs.path() + "/giveup/attempt_" + std::to_string(attempt) + "/1"));
  }
  CHECK_FALSE(std::filesystem::exists(logs.path() + "/giveup/attempt_3"));
}

TEST_CASE("without --max_restarts the first failure ends the job") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "exit", "0", "4"}));
  CHECK(result.code() == 4);
  CHECK(Count(result.err, "restarting") == 0);
}
