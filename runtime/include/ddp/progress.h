// Progress reporting to ddprun's hang detection (--hang_timeout). Collectives count themselves:
// every collective a communicator starts and finishes is counted, so a C++ worker reports
// progress without code. Training steps are reported by ddp::Trainer; a custom training loop
// calls ReportStep itself, which lets the hang report say at which step each rank stopped.
//
// Under ddprun the counters live in a page of shared memory the agent reads (DDPRUN_PROGRESS_FD,
// ddprun/base/progress_page.h): counting is an atomic add, never a system call. Without it
// (not under ddprun, or an older one) every call here does nothing. Thread-safe.
#pragma once

#include <cstdint>

namespace ddp {

// This process is at training step `step` (its count of optimizer steps, resumed ones included).
void ReportStep(int64_t step);

namespace progress_internal {
// For Work: a collective was started / has finished (successfully or not).
void CollectiveIssued();
void CollectiveCompleted();
// For ProcessGroup: this process formed a group (it is in the hang search again) / destroyed
// one (it is done with collectives: what it does until it exits is not a hang).
void GroupFormed();
void GroupDestroyed();
}  // namespace progress_internal

}  // namespace ddp
