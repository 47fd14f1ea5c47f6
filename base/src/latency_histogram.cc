// LatencyHistogram; see latency_histogram.h.
#include "ddprun/base/latency_histogram.h"

#include <algorithm>

namespace ddprun {

void LatencyHistogram::Observe(std::chrono::nanoseconds duration) {
  const double seconds = std::max(0.0, std::chrono::duration<double>(duration).count());
  const auto bucket = std::lower_bound(kBounds.begin(), kBounds.end(), seconds) - kBounds.begin();
  ++counts_[static_cast<size_t>(bucket)];
  ++count_;
  sum_seconds_ += seconds;
}

}  // namespace ddprun
