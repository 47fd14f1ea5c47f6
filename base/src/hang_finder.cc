// FindHang and HangLatch; see hang_finder.h.
#include "ddprun/base/hang_finder.h"

#include <algorithm>
#include <cstdio>
#include <tuple>

namespace ddprun {
namespace {

constexpr size_t kRanksNamedAtMost = 8;

std::string FormatSeconds(std::chrono::milliseconds duration) {
  const double seconds = static_cast<double>(duration.count()) / 1000.0;
  char text[32];
  std::snprintf(text, sizeof text, seconds < 10 ? "%.1f s" : "%.0f s", seconds);
  return text;
}

// "at step 5", "at steps 5 to 7", "at collective 12", "with no progress since they started",
// or "" when the ranks report nothing comparable.
std::string PositionOf(const std::vector<RankProgress>& ranks) {
  if (ranks.empty()) return "";
  auto range = [](int64_t low, int64_t high, const char* one, const char* many) {
    if (low == high) return std::string(" at ") + one + " " + std::to_string(low);
    return std::string(" at ") + many + " " + std::to_string(low) + " to " + std::to_string(high);
  };
  const bool steps = std::all_of(ranks.begin(), ranks.end(), [](auto& r) { return r.step >= 0; });
  if (steps) {
    auto [low, high] = std::minmax_element(ranks.begin(), ranks.end(),
                                           [](auto& a, auto& b) { return a.step < b.step; });
    return range(low->step, high->step, "step", "steps");
  }
  const bool counted =
      std::all_of(ranks.begin(), ranks.end(), [](auto& r) { return r.collectives > 0; });
  if (counted) {
    auto [low, high] = std::minmax_element(
        ranks.begin(), ranks.end(), [](auto& a, auto& b) { return a.collectives < b.collectives; });
    return range(static_cast<int64_t>(low->collectives), static_cast<int64_t>(high->collectives),
                 "collective", "collectives");
  }
  const bool none = std::none_of(ranks.begin(), ranks.end(), [](auto& r) { return r.progressed; });
  if (none)
    return ranks.size() == 1 ? " with no progress since it started"
                             : " with no progress since they started";
  return "";
}

std::string NameRanks(const std::vector<RankProgress>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  const size_t named = std::min(ranks.size(), kRanksNamedAtMost);
  for (size_t i = 0; i < named; ++i) {
    if (i > 0) text += (i + 1 == named && named == ranks.size()) ? " and " : ", ";
    const RankProgress& r = ranks[i];
    text += std::to_string(r.global_rank) + " (" + r.host + ", local " +
            std::to_string(r.local_rank) + ")";
  }
  if (named < ranks.size()) text += " and " + std::to_string(ranks.size() - named) + " more";
  return text;
}

// (step, collectives started): who is further along.
std::tuple<int64_t, uint64_t> PlaceOf(const RankProgress& rank) {
  return {rank.step, rank.collectives};
}

}  // namespace

std::chrono::milliseconds HangSettings::EffectiveFirstTimeout() const {
  if (first_timeout.count() > 0) return first_timeout;
  return std::max(timeout, std::chrono::milliseconds(300'000));
}

std::chrono::milliseconds HangSettings::SamplingPeriod() const {
  if (!enabled()) return std::chrono::milliseconds(250);
  return std::clamp(timeout / 8, std::chrono::milliseconds(50), std::chrono::milliseconds(500));
}

const char* HangActionName(HangSettings::Action action) {
  switch (action) {
    case HangSettings::Action::kRestart:
      return "restart";
    case HangSettings::Action::kStacks:
      return "stacks";
    case HangSettings::Action::kFail:
      return "fail";
  }
  return "restart";
}

std::optional<HangSettings::Action> ParseHangAction(const std::string& text) {
  for (auto action : {HangSettings::Action::kRestart, HangSettings::Action::kStacks,
                      HangSettings::Action::kFail}) {
    if (text == HangActionName(action)) return action;
  }
  return std::nullopt;
}

std::optional<HangFinding> FindHang(const std::vector<RankProgress>& all_ranks,
                                    const HangSettings& settings) {
  if (!settings.enabled()) return std::nullopt;
  std::vector<RankProgress> ranks;
  std::copy_if(all_ranks.begin(), all_ranks.end(), std::back_inserter(ranks),
               [](const RankProgress& r) { return !r.finished; });
  if (ranks.empty()) return std::nullopt;
  const auto first_timeout = settings.EffectiveFirstTimeout();
  auto stalled = [&](const RankProgress& r) {
    return r.idle >= (r.progressed ? settings.timeout : first_timeout);
  };
  std::vector<RankProgress> hung;
  std::copy_if(ranks.begin(), ranks.end(), std::back_inserter(hung), stalled);
  if (hung.empty()) return std::nullopt;
  if (hung.size() < ranks.size()) {
    // Stalled inside a collective, a rank waits for the others: for one still moving, or for
    // one about to be found stalled itself (another node's report comes a moment later).
    std::erase_if(hung, [](const RankProgress& r) { return r.in_collective; });
    if (hung.empty()) return std::nullopt;
  } else {
    const auto behind = *std::min_element(ranks.begin(), ranks.end(),
                                          [](auto& a, auto& b) { return PlaceOf(a) < PlaceOf(b); });
    std::vector<RankProgress> narrowed;
    std::copy_if(ranks.begin(), ranks.end(), std::back_inserter(narrowed),
                 [&](auto& r) { return PlaceOf(r) == PlaceOf(behind); });
    if (narrowed.size() == ranks.size()) {
      narrowed.clear();
      std::copy_if(ranks.begin(), ranks.end(), std::back_inserter(narrowed),
                   [](auto& r) { return !r.in_collective; });
      if (narrowed.empty()) narrowed = ranks;
    }
    hung = std::move(narrowed);
  }
  std::sort(hung.begin(), hung.end(),
            [](auto& a, auto& b) { return a.global_rank < b.global_rank; });
  std::vector<RankProgress> others;
  std::copy_if(ranks.begin(), ranks.end(), std::back_inserter(others), [&](auto& r) {
    return std::none_of(hung.begin(), hung.end(),
                        [&](auto& h) { return h.global_rank == r.global_rank; });
  });
  const auto shortest_idle = std::min_element(hung.begin(), hung.end(), [](auto& a, auto& b) {
                               return a.idle < b.idle;
                             })->idle;

  HangFinding finding;
  finding.description =
      "hang: " + NameRanks(hung) + PositionOf(hung) + " for " + FormatSeconds(shortest_idle);
  if (others.empty()) {
    const bool waiting =
        std::all_of(hung.begin(), hung.end(), [](auto& r) { return r.in_collective; });
    if (hung.size() > 1) {
      finding.description +=
          waiting ? "; every rank is stalled inside a collective" : "; every rank is stalled";
    }
  } else {
    const std::string where = PositionOf(others);
    const bool waiting =
        std::all_of(others.begin(), others.end(), [](auto& r) { return r.in_collective; });
    finding.description +=
        "; the other " + std::to_string(others.size()) + (others.size() == 1 ? " rank" : " ranks") +
        (where.empty() ? " progress" : where) + (waiting ? ", waiting in a collective" : "");
  }
  finding.hung = std::move(hung);
  return finding;
}

std::string DescribeStall(const RankProgress& rank) {
  if (!rank.progressed)
    return "no progress in the " + FormatSeconds(rank.idle) + " since it started";
  return "no progress for " + FormatSeconds(rank.idle) + PositionOf({rank});
}

bool HangLatch::Admit(const HangFinding& finding) {
  bool news = false;
  for (const RankProgress& rank : finding.hung) {
    auto known = named_.find(Named{rank.global_rank, {}});
    // Idle for less than when it was named: it progressed in between.
    if (known == named_.end() || rank.idle < known->idle) news = true;
  }
  named_.clear();
  // The idle times seen now: the next finding is compared with them.
  for (const RankProgress& rank : finding.hung) named_.insert(Named{rank.global_rank, rank.idle});
  return news;
}

}  // namespace ddprun
