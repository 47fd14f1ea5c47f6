// Sleeping on a 32-bit word in shared memory (Linux futexes, shared between processes: the word
// may be mapped at different addresses in each). The shared-memory ring and the registered
// buffers wait this way after a short spin.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "ddprun/base/status.h"
#include "ddprun/base/status_macros.h"

namespace ddp::cpu {

// Wakes up to `waiters` threads sleeping on `word` (in any process).
void FutexWake(std::atomic<uint32_t>& word, int waiters = 1);

// Sleeps while `word` holds `expected`, for at most `slice`. Waking, a changed word, the slice
// ending and a signal all return OK: the caller checks its condition again. An error only for a
// futex call that cannot work (a bad address), naming `what` was waited on.
ddprun::Status FutexWait(std::atomic<uint32_t>& word, uint32_t expected,
                         std::chrono::milliseconds slice, const char* what);

// How long a waiter sleeps at most before it looks again at what the futex cannot wake it for
// (a peer's death, a close made as it fell asleep, the deadline).
inline constexpr std::chrono::milliseconds kFutexSleepSlice{50};

// How long a waiter spins before it sleeps: at least `spins` checks, and for at least `time`.
struct SpinBudget {
  int spins = 200;
  std::chrono::nanoseconds time{0};
};

// Waits until `ready()` holds: spins as `budget` says (yielding now and then), then sleeps on
// `word` in slices of `slice`. Before each sleep `still_waiting()` may end the wait with its
// error (the other side closed or died, the deadline passed). `sleepers` counts the threads
// asleep on `word`: whoever changes `word` stores it, then wakes them if `sleepers` is not zero
// (both sequentially consistent, so that a waiter either sees the change or is woken).
template <typename Ready, typename StillWaiting>
ddprun::Status SpinThenSleep(std::atomic<uint32_t>& word, std::atomic<uint32_t>& sleepers,
                             SpinBudget budget, std::chrono::milliseconds slice, const char* what,
                             Ready ready, StillWaiting still_waiting) {
  const auto spin_until = std::chrono::steady_clock::now() + budget.time;
  for (int spin = 0;; ++spin) {
    if (ready()) return ddprun::Status::Ok();
    if (spin >= budget.spins &&
        (budget.time.count() == 0 ||
         (spin % 64 == 0 && std::chrono::steady_clock::now() >= spin_until))) {
      break;
    }
    if (spin % 64 == 63) std::this_thread::yield();
  }
  while (true) {
    const uint32_t observed = word.load(std::memory_order_acquire);
    if (ready()) return ddprun::Status::Ok();
    if (ddprun::Status s = still_waiting(); !s.ok()) return s;
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    ddprun::Status slept = ready() ? ddprun::Status::Ok() : FutexWait(word, observed, slice, what);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    RETURN_IF_ERROR(slept);
  }
}

}  // namespace ddp::cpu
