// The collectives' specification as checks a rank runs on its own: deterministic inputs that
// depend on the rank, a reference result computed locally, and a fingerprint of each output so
// that a test can compare ranks bit for bit. Used by the thread-based tests and by the worker
// program that runs the same checks as real processes under ddprun.
//
// Inputs are small integers (-6..6), exact in every data type, so sums are exact whatever the
// order; an average is the exact sum divided once, as the backend divides it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ddp/process_group.h"

namespace ddprun::testing {

struct CheckResults {
  int checks = 0;
  std::vector<std::string> failures;   // what differed from the reference, and where
  std::vector<uint64_t> fingerprints;  // of each output every rank shares: equal on every rank
  bool direct = false;                 // the registered buffer was shared (plan.registered)
};

struct CheckPlan {
  std::vector<size_t> sizes = {0, 1, 7, 1031, 262147};  // elements; the last is ~1 MiB of float32
  size_t large = 0;       // when not 0, also an all_reduce sum of this many float32 (several MiB)
  bool all_types = true;  // false: float32 only
  // true: every tensor of the checks lies in one registered buffer (AllocateShared), at an
  // offset that changes from check to check; all_gather's and reduce_scatter's outputs do not.
  bool registered = false;
};

// Runs every collective, data type and op of `plan` on `communicator` (every rank at once).
CheckResults RunCollectiveChecks(ddp::Communicator& communicator, const CheckPlan& plan);

}  // namespace ddprun::testing
