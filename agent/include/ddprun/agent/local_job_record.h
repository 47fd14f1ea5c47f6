// LocalJobRecord: a single-node job as a rendezvous server would show it (a JobSnapshot: its
// state, round, restarts, last failure, its ranks' progress and the counters of
// docs/metrics.md), kept by the job's LocalCoordinator for the pages `ddprun --metrics_port`
// serves, which are then those of a rendezvous server's job. Written on the agent's thread;
// Snapshot is called from any (the HTTP endpoint's): every method takes the record's lock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/steady_time_source.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

class LocalJobRecord {
 public:
  // `node`: this node, as status names it; `settings`: the job's (one node, its restart budget,
  // its hang settings). `time` must outlive the record.
  LocalJobRecord(std::string job_id, NodeDescription node, RendezvousSettings settings,
                 SteadyTimeSource& time = SteadyTimeSource::Real());

  // The round's workers are to start: round 0, or a restart's.
  void RoundStarted(const NodeAssignment& round) EXCLUDES(mu_);
  // A worker failed; `restarting`: the group restarts for it, else the job fails with it.
  void WorkerFailed(const WorkerFailure& failure, bool restarting) EXCLUDES(mu_);
  // The running ranks' progress as sampled, each with its straggler and hung flags set.
  void ProgressSampled(std::vector<RankProgress> ranks) EXCLUDES(mu_);
  // A hang found (once per stall).
  void HangFound(const HangFinding& finding) EXCLUDES(mu_);
  // A rank named a straggler (its recovery is not counted).
  void StragglerNamed() EXCLUDES(mu_);
  // Every worker exited 0.
  void Succeeded() EXCLUDES(mu_);
  // The job is over without success, for `reason`.
  void Failed(const std::string& reason) EXCLUDES(mu_);

  // The job now: its ranks' idle times run on from when they were sampled.
  JobSnapshot Snapshot() const EXCLUDES(mu_);

 private:
  SteadyTimeSource& time_;
  mutable Mutex mu_;
  JobSnapshot job_ GUARDED_BY(mu_);  // one node, whose progress is as of progress_at_
  SteadyTimeSource::TimePoint progress_at_ GUARDED_BY(mu_);
  SteadyTimeSource::TimePoint forming_since_ GUARDED_BY(mu_);  // the round that is to start
  std::optional<SteadyTimeSource::TimePoint> failure_seen_at_ GUARDED_BY(mu_);  // for a restart
};

}  // namespace ddprun
