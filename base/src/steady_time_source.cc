#include "ddprun/base/steady_time_source.h"

#include <utility>

namespace ddprun {
namespace {

class SteadyClockSource final : public SteadyTimeSource {
 public:
  TimePoint Now() const override { return std::chrono::steady_clock::now(); }
  bool stepped() const override { return false; }
  void OnStep(std::function<void()>) override {}
};

}  // namespace

SteadyTimeSource& SteadyTimeSource::Real() {
  static SteadyClockSource clock;  // no state: safe to share between threads
  return clock;
}

ManualTime::ManualTime() : now_(std::chrono::steady_clock::now()) {}

SteadyTimeSource::TimePoint ManualTime::Now() const {
  MutexLock lock(mu_);
  return now_;
}

void ManualTime::OnStep(std::function<void()> on_step) {
  MutexLock lock(listener_mu_);
  on_step_ = std::move(on_step);
}

void ManualTime::Advance(std::chrono::nanoseconds step) {
  {
    MutexLock lock(mu_);
    now_ += step;
  }
  MutexLock lock(listener_mu_);
  if (on_step_) on_step_();
}

}  // namespace ddprun
