// StepTimer: a step's cost over the last window of steps, less the time spent in collectives.
#include "ddprun/base/step_timer.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

namespace {
const StepTimer::Clock::time_point kStart{1000s};
}

TEST_CASE("a step time is known once a window of steps was seen", "[step_timer]") {
  StepTimer timer;
  for (int64_t step = 0; step < StepTimer::kWindowSteps; ++step) {
    timer.Sample(step, kStart + step * 100ms, 0ns);
    CHECK(timer.step_time() == 0us);
  }
  timer.Sample(StepTimer::kWindowSteps, kStart + StepTimer::kWindowSteps * 100ms, 0ns);
  CHECK(timer.step_time() == 100ms);
}

TEST_CASE("waits inside collectives are not the rank's own time", "[step_timer]") {
  StepTimer timer;
  // 100 ms a step, 70 of them waiting for another rank in the all-reduce.
  for (int64_t step = 0; step <= 20; ++step) timer.Sample(step, kStart + step * 100ms, step * 70ms);
  CHECK(timer.step_time() == 30ms);
}

TEST_CASE("the window follows the latest steps", "[step_timer]") {
  StepTimer timer;
  auto at = kStart;
  for (int64_t step = 0; step <= 30; ++step) {
    timer.Sample(step, at, 0ns);
    at += step < 10 ? 10ms : 50ms;  // fast at first, slow from step 10 on
  }
  CHECK(timer.step_time() == 50ms);
}

TEST_CASE("samples that see no new step, or several at once, change nothing wrongly",
          "[step_timer]") {
  StepTimer timer;
  timer.Sample(-1, kStart, 0ns);  // no step yet
  timer.Sample(0, kStart, 0ns);
  timer.Sample(0, kStart, 0ns);
  timer.Sample(7, kStart + 70ms, 0ns);  // sampled seldom: 7 steps between two samples
  timer.Sample(15, kStart + 150ms, 0ns);
  CHECK(timer.step_time() == 10ms);
}

TEST_CASE("a step counter that goes back starts the window again", "[step_timer]") {
  StepTimer timer;
  for (int64_t step = 0; step <= 10; ++step) timer.Sample(step, kStart + step * 10ms, 0ns);
  REQUIRE(timer.step_time() == 10ms);
  timer.Sample(3, kStart + 1s, 0ns);  // a restarted worker, resumed from a checkpoint
  CHECK(timer.step_time() == 0us);
}
