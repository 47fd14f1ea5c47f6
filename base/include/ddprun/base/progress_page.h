// The progress page: one worker's progress counters in a page of shared memory. The agent creates
// it (a memfd), keeps a mapping, and passes the descriptor to the worker, whose number is in
// DDPRUN_PROGRESS_FD; the runtime maps it once and from then on counts with plain atomic
// operations on shared memory, no system call per collective. The agent reads the counters when
// it samples progress (ProgressMonitor); any change is progress.
//
// One writer process (the worker, any of its threads) and one reader (the agent). The counters
// are lock-free atomics, which work across processes on one mapping.
#pragma once

#include <atomic>
#include <cstdint>

#include "ddprun/base/status.h"

namespace ddprun {

//
// The layout is a contract with a second writer, ddprun's Python hook (agent/python/
// sitecustomize.py), which maps the same page from a PyTorch worker: a change here is a change
// there, and a new magic.
struct ProgressPage {
  static constexpr uint64_t kMagic = 0x334750524e524444;  // "DDRNRPG3", little-endian
  uint64_t magic;
  std::atomic<uint64_t> collectives_issued;     // collectives the worker has started
  std::atomic<uint64_t> collectives_completed;  // of those, the ones finished (or failed)
  std::atomic<int64_t> step;                    // the last training step reported; -1: none
  // Nanoseconds the worker has spent with at least one collective started and not finished,
  // counted each time the last one finishes. What a step costs the rank itself is its time
  // less this: a rank that waits for a slower one waits inside a collective (straggler_watch.h).
  std::atomic<uint64_t> collective_wait_ns;
  // CLOCK_MONOTONIC (the agent's steady_clock) in nanoseconds when `step` was last written,
  // written before it; 0: never. Steps are timed by the worker's clock, not the agent's samples.
  std::atomic<uint64_t> step_reported_ns;
  // CLOCK_MONOTONIC in nanoseconds when the worker said it is done with collectives (it
  // destroyed its process group, or its interpreter began to exit); 0: it has not, or it formed
  // a group again since. A finished worker is out of the hang search: it waits for no one, and
  // what it does until it exits (a last checkpoint, the interpreter's teardown) is not a hang.
  std::atomic<uint64_t> finished_ns;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                  std::atomic<int64_t>::is_always_lock_free,
              "the progress page's counters must be lock-free to be shared between processes");

// A mapping of a progress page; unmaps on destruction. Movable.
class ProgressPageMapping {
 public:
  ProgressPageMapping() = default;
  ~ProgressPageMapping();
  ProgressPageMapping(ProgressPageMapping&& other) noexcept;
  ProgressPageMapping& operator=(ProgressPageMapping&& other) noexcept;

  // A new page in a memfd: magic set, counters 0, step -1. Its descriptor is close-on-exec and
  // numbered 10 or more (out of the way of the standard streams); owned by the mapping.
  static Result<ProgressPageMapping> Create();
  // Maps the page behind `fd` (the worker's side; the descriptor stays the caller's).
  // INVALID_ARGUMENT when it is not a progress page.
  static Result<ProgressPageMapping> Map(int fd);

  ProgressPage* page() const { return page_; }
  int fd() const { return owned_fd_; }  // Create's descriptor; -1 for Map

 private:
  ProgressPage* page_ = nullptr;
  int owned_fd_ = -1;
};

}  // namespace ddprun
