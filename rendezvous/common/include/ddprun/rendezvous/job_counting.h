// How a job's events move its counters (JobCounters, round_types.h), one way for the rounds a
// rendezvous server runs (JobRounds) and for those a single-node agent runs itself
// (LocalJobRecord), so that their /metrics pages mean the same (docs/metrics.md).
#pragma once

#include "ddprun/base/hang_finder.h"
#include "ddprun/base/worker_failure.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

// A worker failure, counted by its cause: stopped as hung, not started, a signal, an exit code.
void CountWorkerFailure(const WorkerFailure& failure, JobCounters& counters);

// A hang found (once per stall), with its detection latency: from the most recent progress of
// the ranks it names to the finding.
void CountHang(const HangFinding& finding, JobCounters& counters);

}  // namespace ddprun
