// StragglerWatch: names the ranks whose steps cost them much more than the job's median
// (--straggler_ratio), once when they become stragglers and once when they recover. Pure: the
// agent (one node) and the rendezvous server (many) feed it every running rank's progress, with
// its step time (step_timer.h), as they sample it, and say what it returns.
//
// A rank is a straggler when its step time is at least `ratio` times the median of the ranks
// whose step time is known (two or more), and at least kLeastExcess above it (a few
// milliseconds of noise in a fast step are no straggler). It recovers below 90% of that bound,
// so that a rank at the edge is not named at every sample.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "ddprun/base/hang_finder.h"

namespace ddprun {

struct StragglerNews {
  RankProgress rank;
  bool recovered = false;  // false: it has just become a straggler
  std::chrono::microseconds median{0};
  // "straggler: rank 3 (h1, local 1): 212 ms a step, the job's median 101 ms", or the same
  // with "straggler recovered:".
  std::string description;
};

class StragglerWatch {
 public:
  static constexpr double kDefaultRatio = 1.5;
  static constexpr std::chrono::milliseconds kLeastExcess{5};

  // What changed since the last call, by global rank, with `ratio` (more than 1) as the bound.
  // A rank that is gone (its node or worker ended) is forgotten without news.
  std::vector<StragglerNews> Update(const std::vector<RankProgress>& ranks, double ratio);
  bool IsStraggler(int global_rank) const { return named_.contains(global_rank); }
  // Forgets every rank (a new round).
  void Reset() { named_.clear(); }

 private:
  std::set<int> named_;
};

// "212 ms", "4.5 ms".
std::string FormatStepTime(std::chrono::microseconds step_time);

}  // namespace ddprun
