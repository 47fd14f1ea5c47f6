// JobRegistry; see job_registry.h.
#include "ddprun/rendezvous/job_registry.h"

#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

const char* StateName(JobRounds::State state) {
  switch (state) {
    case JobRounds::State::kForming:
      return "forming";
    case JobRounds::State::kRunning:
      return "running";
    case JobRounds::State::kComplete:
      return "complete";
    case JobRounds::State::kFailed:
      return "failed";
  }
  return "unknown";
}

}  // namespace

Status ValidateRendezvousSettings(const RendezvousSettings& settings) {
  if (settings.min_nodes < 1 || settings.max_nodes < settings.min_nodes) {
    return InvalidArgumentError("a job needs 1 <= min_nodes <= max_nodes, not " +
                                std::to_string(settings.min_nodes) + ":" +
                                std::to_string(settings.max_nodes));
  }
  if (settings.max_restarts < 0) return InvalidArgumentError("max_restarts must be 0 or more");
  if (settings.join_timeout.count() <= 0 || settings.last_call_timeout.count() <= 0 ||
      settings.heartbeat_timeout.count() <= 0) {
    return InvalidArgumentError("rendezvous timeouts must be positive");
  }
  return Status::Ok();
}

JobRounds* JobRegistry::Find(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

void JobRegistry::Drain(const std::string& job_id, JobRounds& job, RendezvousTime now,
                        std::vector<RoutedEvent>& events) {
  for (auto& event : job.TakeEvents()) events.push_back({job_id, std::move(event)});
  const bool ended =
      job.state() == JobRounds::State::kComplete || job.state() == JobRounds::State::kFailed;
  if (ended) ended_at_.try_emplace(job_id, now);
}

Status JobRegistry::Join(const std::string& job_id, const RendezvousSettings& settings,
                         const NodeDescription& node, const std::optional<RunningRound>& running,
                         RendezvousTime now, std::vector<RoutedEvent>& events) {
  if (job_id.empty()) return InvalidArgumentError("a job id is required (--rdzv_id)");
  MutexLock lock(mu_);
  JobRounds* job = Find(job_id);
  if (job == nullptr) {
    RETURN_IF_ERROR(ValidateRendezvousSettings(settings));
    job = jobs_.emplace(job_id, std::make_unique<JobRounds>(settings, now)).first->second.get();
  }
  const RendezvousSettings& own = job->settings();
  if (settings.min_nodes != own.min_nodes || settings.max_nodes != own.max_nodes) {
    return InvalidArgumentError(
        "job '" + job_id + "' runs with --nnodes=" + std::to_string(own.min_nodes) + ":" +
        std::to_string(own.max_nodes) + " but node " + node.host +
        " asked for --nnodes=" + std::to_string(settings.min_nodes) + ":" +
        std::to_string(settings.max_nodes) + "; give every node the same --nnodes");
  }
  Status status = running ? job->Resume(node, *running, now) : job->Join(node, now);
  Drain(job_id, *job, now, events);
  return status;
}

Status JobRegistry::Heartbeat(const std::string& job_id, const std::string& node_id,
                              RendezvousTime now, const std::optional<NodeProgress>& progress,
                              std::vector<RoutedEvent>& events) {
  MutexLock lock(mu_);
  JobRounds* job = Find(job_id);
  if (job == nullptr) return NotFoundError("job '" + job_id + "' is unknown; join it first");
  Status status = job->Heartbeat(node_id, now, progress);
  Drain(job_id, *job, now, events);
  return status;
}

void JobRegistry::Update(const std::string& job_id, RendezvousTime now,
                         const std::function<void(JobRounds&)>& change,
                         std::vector<RoutedEvent>& events) {
  MutexLock lock(mu_);
  if (JobRounds* job = Find(job_id)) {
    change(*job);
    Drain(job_id, *job, now, events);
  }
}

void JobRegistry::WorkerFailed(const std::string& job_id, const std::string& node_id, int64_t round,
                               const WorkerFailure& failure, int exit_status, RendezvousTime now,
                               std::vector<RoutedEvent>& events) {
  Update(
      job_id, now,
      [&](JobRounds& job) { job.WorkerFailed(node_id, round, failure, exit_status, now); }, events);
}

void JobRegistry::Succeeded(const std::string& job_id, const std::string& node_id, int64_t round,
                            RendezvousTime now, std::vector<RoutedEvent>& events) {
  Update(
      job_id, now, [&](JobRounds& job) { job.NodeSucceeded(node_id, round); }, events);
}

void JobRegistry::Leave(const std::string& job_id, const std::string& node_id, RendezvousTime now,
                        std::vector<RoutedEvent>& events) {
  Update(
      job_id, now, [&](JobRounds& job) { job.Leave(node_id, now); }, events);
}

void JobRegistry::Disconnected(const std::string& job_id, const std::string& node_id,
                               RendezvousTime now) {
  std::vector<RoutedEvent> none;  // a disconnection only moves a deadline
  Update(
      job_id, now, [&](JobRounds& job) { job.Disconnected(node_id, now); }, none);
}

void JobRegistry::Tick(RendezvousTime now, std::vector<RoutedEvent>& events,
                       std::vector<std::string>* forgotten) {
  MutexLock lock(mu_);
  for (auto& [job_id, job] : jobs_) {
    job->Tick(now);
    Drain(job_id, *job, now, events);
  }
  for (auto it = ended_at_.begin(); it != ended_at_.end();) {
    if (now - it->second < kEndedJobRetention) {
      ++it;
      continue;
    }
    jobs_.erase(it->first);
    if (forgotten != nullptr) forgotten->push_back(it->first);
    it = ended_at_.erase(it);
  }
}

std::optional<RendezvousTime> JobRegistry::NextDeadline() const {
  MutexLock lock(mu_);
  std::optional<RendezvousTime> next;
  auto consider = [&next](std::optional<RendezvousTime> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  for (const auto& [job_id, job] : jobs_) consider(job->NextDeadline());
  for (const auto& [job_id, ended] : ended_at_) consider(ended + kEndedJobRetention);
  return next;
}

bool JobRegistry::AllEnded() const {
  MutexLock lock(mu_);
  for (const auto& [id, job] : jobs_) {
    if (job->state() != JobRounds::State::kComplete && job->state() != JobRounds::State::kFailed) {
      return false;
    }
  }
  return true;
}

Result<std::vector<JobSnapshot>> JobRegistry::Snapshot(const std::string& job_id,
                                                       RendezvousTime now) const {
  MutexLock lock(mu_);
  std::vector<JobSnapshot> snapshots;
  for (const auto& [id, job] : jobs_) {
    if (!job_id.empty() && id != job_id) continue;
    snapshots.push_back({id, StateName(job->state()), job->round(), job->settings(),
                         job->restarts_used(), job->last_failure(), job->last_worker_failure(),
                         job->Nodes(now)});
  }
  if (!job_id.empty() && snapshots.empty()) {
    return NotFoundError("no job '" + job_id + "' on this rendezvous server");
  }
  return snapshots;
}

}  // namespace ddprun
