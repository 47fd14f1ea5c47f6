// FindHang, DescribeStall and HangLatch: which ranks a hang names, and the line that says so.
#include "ddprun/base/hang_finder.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

HangSettings Timeout(std::chrono::milliseconds timeout) {
  HangSettings settings;
  settings.timeout = timeout;
  settings.first_timeout = 30s;
  return settings;
}

// A rank on host h<rank / 2> that has progressed: at `step`, `collectives` started, idle `idle`.
RankProgress Rank(int rank, int64_t step, uint64_t collectives, bool in_collective,
                  std::chrono::milliseconds idle) {
  RankProgress progress;
  progress.global_rank = rank;
  progress.local_rank = rank % 2;
  progress.host = "h" + std::to_string(rank / 2);
  progress.step = step;
  progress.collectives = collectives;
  progress.in_collective = in_collective;
  progress.progressed = true;
  progress.idle = idle;
  return progress;
}

std::vector<int> Named(const HangFinding& finding) {
  std::vector<int> ranks;
  for (const auto& rank : finding.hung) ranks.push_back(rank.global_rank);
  return ranks;
}

}  // namespace

TEST_CASE("no rank idle for the timeout is no hang, and detection off finds nothing") {
  std::vector<RankProgress> ranks = {Rank(0, 5, 10, false, 1999ms), Rank(1, 5, 10, false, 10ms)};
  CHECK_FALSE(FindHang(ranks, Timeout(2s)));
  ranks[0].idle = 1h;
  CHECK_FALSE(FindHang(ranks, HangSettings{}));
}

TEST_CASE("a rank stalled while others progress is named, with where the others are") {
  std::vector<RankProgress> ranks = {Rank(0, 141, 0, false, 50ms), Rank(1, 99, 0, false, 2100ms),
                                     Rank(2, 140, 0, false, 30ms)};
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{1});
  CHECK(finding->description ==
        "hang: rank 1 (h0, local 1) at step 99 for 2.1 s; the other 2 ranks at steps 140 to 141");
}

TEST_CASE("when every rank is stalled the ranks behind the others are named") {
  // Ranks 5 and 7 never reached step 1580; the other 14 wait there.
  std::vector<RankProgress> ranks;
  for (int rank = 0; rank < 16; ++rank) {
    const bool behind = rank == 5 || rank == 7;
    ranks.push_back(Rank(rank, behind ? 1579 : 1580, behind ? 3000 : 3001, !behind, 60s));
  }
  auto finding = FindHang(ranks, Timeout(30s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{5, 7});
  CHECK(finding->description ==
        "hang: ranks 5 (h2, local 1) and 7 (h3, local 1) at step 1579 for 60 s; the other 14 "
        "ranks at step 1580, waiting in a collective");
}

TEST_CASE("level ranks: the ones outside a collective are named, and all when all are inside one") {
  std::vector<RankProgress> ranks = {Rank(0, 99, 200, true, 3s), Rank(1, 99, 200, false, 3s),
                                     Rank(2, 99, 200, true, 3s)};
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{1});
  for (auto& rank : ranks) rank.in_collective = true;
  finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{0, 1, 2});
  CHECK(finding->description ==
        "hang: ranks 0 (h0, local 0), 1 (h0, local 1) and 2 (h1, local 0) at step 99 for 3.0 s; "
        "every rank is stalled inside a collective");
}

TEST_CASE("a rank without progress yet is held to the first timeout, not the timeout") {
  RankProgress starting = Rank(0, -1, 0, false, 10s);
  starting.progressed = false;
  std::vector<RankProgress> ranks = {starting};
  CHECK_FALSE(FindHang(ranks, Timeout(2s)));
  ranks[0].idle = 30s;
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(finding->description ==
        "hang: rank 0 (h0, local 0) with no progress since it started for 30 s");
  CHECK(DescribeStall(finding->hung[0]) == "no progress in the 30 s since it started");
  // Its default: the larger of the timeout and five minutes.
  HangSettings defaults;
  defaults.timeout = 2s;
  CHECK(defaults.EffectiveFirstTimeout() == 300s);
  defaults.timeout = 600s;
  CHECK(defaults.EffectiveFirstTimeout() == 600s);
}

TEST_CASE("collectives place ranks that report no steps") {
  std::vector<RankProgress> ranks = {Rank(0, -1, 12, true, 5s), Rank(1, -1, 11, false, 5s)};
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{1});
  CHECK(finding->description ==
        "hang: rank 1 (h0, local 1) at collective 11 for 5.0 s; the other 1 rank at collective 12, "
        "waiting in a collective");
  CHECK(DescribeStall(finding->hung[0]) == "no progress for 5.0 s at collective 11");
}

TEST_CASE("many hung ranks are named up to eight, then counted") {
  std::vector<RankProgress> ranks;
  for (int rank = 0; rank < 12; ++rank) ranks.push_back(Rank(rank, 1, 1, false, 3s));
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(finding->hung.size() == 12);
  CHECK(finding->description.find("7 (h3, local 1) and 4 more at step 1") != std::string::npos);
}

TEST_CASE("the latch says a hang once, and again after its ranks progressed") {
  HangLatch latch;
  std::vector<RankProgress> ranks = {Rank(0, 5, 0, false, 10ms), Rank(1, 4, 0, false, 2s)};
  auto first = FindHang(ranks, Timeout(2s));
  REQUIRE(first);
  CHECK(latch.Admit(*first));
  ranks[1].idle = 3s;
  CHECK_FALSE(latch.Admit(*FindHang(ranks, Timeout(2s))));  // the same stall, longer
  ranks[1].idle = 2500ms;                                   // it moved, and stalled again
  CHECK(latch.Admit(*FindHang(ranks, Timeout(2s))));
  latch.Reset();
  ranks[1].idle = 9s;
  CHECK(latch.Admit(*FindHang(ranks, Timeout(2s))));
}

TEST_CASE("hang actions parse from their names") {
  CHECK(ParseHangAction("restart") == HangSettings::Action::kRestart);
  CHECK(ParseHangAction("stacks") == HangSettings::Action::kStacks);
  CHECK(ParseHangAction("fail") == HangSettings::Action::kFail);
  CHECK_FALSE(ParseHangAction("ignore"));
  CHECK(std::string(HangActionName(HangSettings::Action::kStacks)) == "stacks");
}

TEST_CASE("ranks stalled inside a collective while another still moves are no hang yet") {
  // Node A's ranks crossed the timeout first; node B's report, a moment older, has its ranks
  // just below it: the one B holds outside a collective is the one they wait for.
  std::vector<RankProgress> ranks = {Rank(0, 99, 100, true, 2001ms), Rank(1, 99, 100, true, 2001ms),
                                     Rank(2, 99, 100, true, 1751ms),
                                     Rank(3, 99, 99, false, 1751ms)};
  CHECK_FALSE(FindHang(ranks, Timeout(2s)));
  ranks[3].idle = 2002ms;
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{3});
  CHECK(finding->description ==
        "hang: rank 3 (h1, local 1) at step 99 for 2.0 s; the other 3 ranks at step 99, waiting in "
        "a collective");
}

TEST_CASE("a finished rank is out of the search: quiet after its last step is no hang") {
  // Both ranks are past their last step, saving a checkpoint or tearing the interpreter down.
  std::vector<RankProgress> ranks = {Rank(0, 6, 12, false, 5s), Rank(1, 6, 12, false, 5s)};
  ranks[0].finished = ranks[1].finished = true;
  CHECK_FALSE(FindHang(ranks, Timeout(2s)));
  // One still waits in a collective the finished one will never join: that one alone is named.
  ranks[1].finished = false;
  ranks[1].in_collective = true;
  ranks[1].collectives = 13;
  auto finding = FindHang(ranks, Timeout(2s));
  REQUIRE(finding);
  CHECK(Named(*finding) == std::vector<int>{1});
  CHECK(finding->description == "hang: rank 1 (h0, local 1) at step 6 for 5.0 s");
}
