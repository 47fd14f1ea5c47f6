// SteadyTimeSource: where a component that owns deadlines reads the time, so that the tests of
// its logic step time instead of waiting for it. SteadyTimeSource::Real() is the steady clock;
// ManualTime stays where it is until a test advances it, and then tells its listener, so the
// owner re-reads its deadlines at once.
#pragma once

#include <chrono>
#include <functional>

#include "ddprun/base/thread_annotations.h"

namespace ddprun {

class SteadyTimeSource {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  virtual ~SteadyTimeSource() = default;
  virtual TimePoint Now() const = 0;
  // True when time moves only by steps: the owner then waits for steps, not on real timers.
  virtual bool stepped() const = 0;
  // `on_step` runs on the stepping thread after each step; one listener at a time (an empty
  // function removes it, and returns only once a call of the old one has returned, so an owner
  // may remove it in its destructor). The steady clock never steps and ignores it.
  virtual void OnStep(std::function<void()> on_step) = 0;

  // The steady clock, shared by every owner that is not under test.
  static SteadyTimeSource& Real();
};

class ManualTime final : public SteadyTimeSource {
 public:
  // Starts at the steady clock's present, so times taken from it and from the clock compare.
  ManualTime();

  TimePoint Now() const override EXCLUDES(mu_);
  bool stepped() const override { return true; }
  void OnStep(std::function<void()> on_step) override EXCLUDES(listener_mu_);
  // Moves the time forward by `step`, then calls the listener, which may read Now().
  void Advance(std::chrono::nanoseconds step) EXCLUDES(mu_, listener_mu_);

 private:
  mutable Mutex mu_;
  TimePoint now_ GUARDED_BY(mu_);
  Mutex listener_mu_;  // held while the listener runs
  std::function<void()> on_step_ GUARDED_BY(listener_mu_);
};

}  // namespace ddprun
