// LocalJobRecord; see local_job_record.h.
#include "ddprun/agent/local_job_record.h"

#include "ddprun/rendezvous/job_counting.h"

namespace ddprun {

LocalJobRecord::LocalJobRecord(std::string job_id, NodeDescription node,
                               RendezvousSettings settings, SteadyTimeSource& time)
    : time_(time) {
  MutexLock lock(mu_);
  job_.job_id = std::move(job_id);
  job_.state = "forming";
  job_.settings = std::move(settings);
  NodeSnapshot snapshot;
  snapshot.description = std::move(node);
  job_.nodes.push_back(std::move(snapshot));
  forming_since_ = progress_at_ = time_.Now();
}

void LocalJobRecord::RoundStarted(const NodeAssignment& round) {
  MutexLock lock(mu_);
  const auto now = time_.Now();
  job_.state = "running";
  job_.round = round.round;
  job_.restarts_used = round.restart_count;
  NodeSnapshot& node = job_.nodes.front();
  node.group_rank = round.group_rank;
  node.first_global_rank = round.first_global_rank;
  node.progress.clear();
  ++job_.counters.rounds_formed;
  job_.counters.round_formation.Observe(now - forming_since_);
  if (failure_seen_at_) job_.counters.restart.Observe(now - *failure_seen_at_);
  failure_seen_at_.reset();
}

void LocalJobRecord::WorkerFailed(const WorkerFailure& failure, bool restarting) {
  MutexLock lock(mu_);
  job_.last_failure = DescribeFailure(failure);
  job_.last_worker_failure = failure;
  CountWorkerFailure(failure, job_.counters);
  if (restarting) failure_seen_at_ = forming_since_ = time_.Now();
}

void LocalJobRecord::ProgressSampled(std::vector<RankProgress> ranks) {
  MutexLock lock(mu_);
  job_.nodes.front().progress = std::move(ranks);
  progress_at_ = time_.Now();
}

void LocalJobRecord::HangFound(const HangFinding& finding) {
  MutexLock lock(mu_);
  CountHang(finding, job_.counters);
}

void LocalJobRecord::StragglerNamed() {
  MutexLock lock(mu_);
  ++job_.counters.stragglers;
}

void LocalJobRecord::Succeeded() {
  MutexLock lock(mu_);
  job_.state = "complete";
  job_.nodes.front().succeeded = true;
}

void LocalJobRecord::Failed(const std::string& reason) {
  MutexLock lock(mu_);
  job_.state = "failed";
  job_.last_failure = reason;
}

JobSnapshot LocalJobRecord::Snapshot() const {
  MutexLock lock(mu_);
  JobSnapshot job = job_;
  const auto since =
      std::chrono::duration_cast<std::chrono::milliseconds>(time_.Now() - progress_at_);
  for (RankProgress& rank : job.nodes.front().progress) rank.idle += since;
  return job;
}

}  // namespace ddprun
