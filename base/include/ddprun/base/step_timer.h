// StepTimer: what a training step costs one rank, from its step counter, the time each step was
// reported and the time it spent waiting inside collectives (progress_page.h). Over the last
// kWindowSteps steps: (time between their reports - collective waits in that time) / steps.
//
// Why the waits come off: in data-parallel training every rank waits in each step's all-reduce
// for the slowest, so all ranks take a step in the same time. The time a rank spends outside
// collectives is its own work; a rank whose own work is slow is the straggler the others wait
// for. For a worker that counts no collectives (the progress file only) the waits are 0 and
// this is its plain step time. Pure: times are given.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>

namespace ddprun {

class StepTimer {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr int64_t kWindowSteps = 10;

  // The rank's counters as sampled: its step (-1: none yet), when that step was reported, and
  // its collective waits so far. A step that did not change adds nothing; one that went back
  // (a restarted worker counts from its checkpoint) starts the window again.
  void Sample(int64_t step, Clock::time_point reported_at, std::chrono::nanoseconds waits);
  // Over the last kWindowSteps steps or more; 0 until that many were seen.
  std::chrono::microseconds step_time() const { return step_time_; }

 private:
  struct Point {
    int64_t step;
    Clock::time_point reported_at;
    std::chrono::nanoseconds waits;
  };
  std::deque<Point> points_;  // one per step seen, oldest first, from a window's start on
  std::chrono::microseconds step_time_{0};
};

}  // namespace ddprun
