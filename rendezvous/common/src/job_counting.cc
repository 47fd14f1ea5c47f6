// CountWorkerFailure and CountHang; see job_counting.h.
#include "ddprun/rendezvous/job_counting.h"

#include <algorithm>

namespace ddprun {

void CountWorkerFailure(const WorkerFailure& failure, JobCounters& counters) {
  if (!failure.hang.empty()) {
    ++counters.worker_hangs;
  } else if (!failure.spawn_error.empty()) {
    ++counters.worker_spawn_failures;
  } else if (failure.term_signal) {
    ++counters.worker_signals;
  } else {
    ++counters.worker_exits;
  }
}

void CountHang(const HangFinding& finding, JobCounters& counters) {
  ++counters.hangs;
  if (finding.hung.empty()) return;
  auto latest = finding.hung.front().idle;
  for (const RankProgress& rank : finding.hung) latest = std::min(latest, rank.idle);
  counters.hang_detection.Observe(latest);
}

}  // namespace ddprun
