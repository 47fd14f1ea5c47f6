// StragglerWatch; see straggler_watch.h.
#include "ddprun/base/straggler_watch.h"

#include <algorithm>
#include <cstdio>

namespace ddprun {
namespace {

constexpr double kRecoveryShare = 0.9;

std::string Describe(const RankProgress& rank, std::chrono::microseconds median, bool recovered) {
  return std::string(recovered ? "straggler recovered: rank " : "straggler: rank ") +
         std::to_string(rank.global_rank) + " (" + rank.host + ", local " +
         std::to_string(rank.local_rank) + "): " + FormatStepTime(rank.step_time) +
         " a step, the job's median " + FormatStepTime(median);
}

}  // namespace

std::string FormatStepTime(std::chrono::microseconds step_time) {
  const double ms = static_cast<double>(step_time.count()) / 1000.0;
  char text[32];
  std::snprintf(text, sizeof text, ms < 10 ? "%.1f ms" : "%.0f ms", ms);
  return text;
}

std::vector<StragglerNews> StragglerWatch::Update(const std::vector<RankProgress>& ranks,
                                                  double ratio) {
  std::vector<int64_t> known;
  std::set<int> present;
  for (const RankProgress& rank : ranks) {
    present.insert(rank.global_rank);
    if (rank.step_time.count() > 0) known.push_back(rank.step_time.count());
  }
  std::erase_if(named_, [&](int rank) { return !present.contains(rank); });
  if (known.size() < 2) return {};
  // The lower median: with two ranks, the faster one is the measure.
  std::nth_element(known.begin(), known.begin() + (known.size() - 1) / 2, known.end());
  const std::chrono::microseconds median{known[(known.size() - 1) / 2]};
  const double bound = std::max(ratio * static_cast<double>(median.count()),
                                static_cast<double>((median + kLeastExcess).count()));
  std::vector<StragglerNews> news;
  for (const RankProgress& rank : ranks) {
    if (rank.step_time.count() <= 0) continue;
    const auto step_time = static_cast<double>(rank.step_time.count());
    const bool named = named_.contains(rank.global_rank);
    if (!named && step_time >= bound) {
      named_.insert(rank.global_rank);
      news.push_back({rank, false, median, Describe(rank, median, false)});
    } else if (named && step_time < kRecoveryShare * bound) {
      named_.erase(rank.global_rank);
      news.push_back({rank, true, median, Describe(rank, median, true)});
    }
  }
  std::sort(news.begin(), news.end(),
            [](auto& a, auto& b) { return a.rank.global_rank < b.rank.global_rank; });
  return news;
}

}  // namespace ddprun
