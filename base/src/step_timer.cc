// StepTimer; see step_timer.h.
#include "ddprun/base/step_timer.h"

#include <algorithm>

namespace ddprun {

void StepTimer::Sample(int64_t step, Clock::time_point reported_at,
                       std::chrono::nanoseconds waits) {
  if (step < 0) return;
  if (!points_.empty() && step == points_.back().step) return;
  if (!points_.empty() && step < points_.back().step) {
    points_.clear();
    step_time_ = {};
  }
  points_.push_back({step, reported_at, waits});
  // The newest point at least a window behind this one; the older ones are not needed again.
  while (points_.size() >= 2 && step - points_[1].step >= kWindowSteps) points_.pop_front();
  const Point& start = points_.front();
  const int64_t steps = step - start.step;
  if (steps < kWindowSteps) return;
  const auto own = (reported_at - start.reported_at) - (waits - start.waits);
  step_time_ = std::max(std::chrono::microseconds{0},
                        std::chrono::duration_cast<std::chrono::microseconds>(own / steps));
}

}  // namespace ddprun
