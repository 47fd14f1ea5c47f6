// The report ddprun prints, once, when it gives up: the root cause (the first failure observed)
// and every other worker that failed on its own. Pure formatting of WorkerFailure records
// (ddprun/base/worker_failure.h).
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/worker_failure.h"

namespace ddprun {

// The multi-line report of the round that gave up. `failures` in the order observed on this
// node. `job_root_cause` empty: the first failure is the root cause. Otherwise it is the root
// cause (observed on another node) and `failures` are listed after it as this node's own.
// `program` names what was run (for the title).
std::string FormatFailureReport(const std::string& program,
                                const std::vector<WorkerFailure>& failures, int restarts_used,
                                int max_restarts, const std::string& job_root_cause = "");

}  // namespace ddprun
