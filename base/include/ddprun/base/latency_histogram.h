// LatencyHistogram: how long something took, counted in fixed buckets of seconds, as a
// Prometheus histogram shows it (monitoring/metrics_page.h). Plain and copyable: the rounds keep
// one per job and a status snapshot carries copies. Not thread-safe; the owner serializes.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace ddprun {

class LatencyHistogram {
 public:
  // The buckets' upper bounds in seconds, from a millisecond (a round of a few nodes on one host)
  // to ten minutes (the join timeout's default): every latency the rendezvous measures falls in
  // one, and 19 buckets keep a job's four histograms small on a page of thousands of jobs.
  static constexpr std::array<double, 18> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                     0.1,   0.25,   0.5,   1,    2.5,   5,
                                                     10,    30,     60,    120,  300,   600};

  void Observe(std::chrono::nanoseconds duration);

  // Observations in each bucket: counts()[i] had a value at most kBounds[i] and above the bound
  // before; the last entry counts those above every bound (+Inf). Not cumulative.
  const std::array<uint64_t, kBounds.size() + 1>& counts() const { return counts_; }
  uint64_t count() const { return count_; }
  double sum_seconds() const { return sum_seconds_; }

 private:
  std::array<uint64_t, kBounds.size() + 1> counts_{};
  uint64_t count_ = 0;
  double sum_seconds_ = 0;
};

}  // namespace ddprun
