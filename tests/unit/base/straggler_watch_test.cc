// StragglerWatch: which ranks it names, when they recover, and the lines that say so.
#include "ddprun/base/straggler_watch.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

RankProgress Rank(int rank, std::chrono::microseconds step_time) {
  RankProgress progress;
  progress.global_rank = rank;
  progress.local_rank = rank % 2;
  progress.host = "h" + std::to_string(rank / 2);
  progress.step_time = step_time;
  return progress;
}

}  // namespace

TEST_CASE("a rank at the ratio times the median is named once", "[straggler]") {
  StragglerWatch watch;
  const double ratio = 1.5;
  const std::vector<RankProgress> ranks = {Rank(0, 101ms), Rank(1, 100ms), Rank(2, 104ms),
                                           Rank(3, 212ms)};
  auto news = watch.Update(ranks, ratio);
  REQUIRE(news.size() == 1);
  CHECK(news[0].rank.global_rank == 3);
  CHECK_FALSE(news[0].recovered);
  CHECK(news[0].description ==
        "straggler: rank 3 (h1, local 1): 212 ms a step, the job's median 101 ms");
  CHECK(watch.IsStraggler(3));
  CHECK(watch.Update(ranks, ratio).empty());  // not news again
}

TEST_CASE("a straggler that recovers is named again, once", "[straggler]") {
  StragglerWatch watch;
  const double ratio = 1.5;
  REQUIRE(watch.Update({Rank(0, 100ms), Rank(1, 100ms), Rank(2, 300ms)}, ratio).size() == 1);
  // Just under the bound is not recovery yet: a rank at the edge is not named at every sample.
  CHECK(watch.Update({Rank(0, 100ms), Rank(1, 100ms), Rank(2, 145ms)}, ratio).empty());
  auto news = watch.Update({Rank(0, 100ms), Rank(1, 100ms), Rank(2, 105ms)}, ratio);
  REQUIRE(news.size() == 1);
  CHECK(news[0].recovered);
  CHECK(news[0].description ==
        "straggler recovered: rank 2 (h1, local 0): 105 ms a step, the job's median 100 ms");
  CHECK_FALSE(watch.IsStraggler(2));
}

TEST_CASE("below the ratio, unknown step times and a few ms of noise name no one", "[straggler]") {
  StragglerWatch watch;
  const double ratio = 1.5;
  CHECK(watch.Update({Rank(0, 100ms), Rank(1, 149ms), Rank(2, 120ms)}, ratio).empty());
  CHECK(watch.Update({Rank(0, 0us), Rank(1, 300ms)}, ratio).empty());  // one known: no median
  CHECK(watch.Update({Rank(0, 1ms), Rank(1, 1ms), Rank(2, 4ms)}, ratio).empty());  // 3 ms more
  CHECK(watch.Update({Rank(0, 1ms), Rank(1, 1ms), Rank(2, 7ms)}, ratio).size() == 1);
}

TEST_CASE("a rank that is gone is forgotten without news", "[straggler]") {
  StragglerWatch watch;
  const double ratio = 2.0;
  REQUIRE(watch.Update({Rank(0, 10ms), Rank(1, 10ms), Rank(2, 50ms)}, ratio).size() == 1);
  CHECK(watch.Update({Rank(0, 10ms), Rank(1, 10ms)}, ratio).empty());
  CHECK_FALSE(watch.IsStraggler(2));
  // Back (a new worker of the same rank) and slow again: news again.
  CHECK(watch.Update({Rank(0, 10ms), Rank(1, 10ms), Rank(2, 50ms)}, ratio).size() == 1);
}

TEST_CASE("step times print in milliseconds", "[straggler]") {
  CHECK(FormatStepTime(212400us) == "212 ms");
  CHECK(FormatStepTime(4500us) == "4.5 ms");
}
