// JobRegistry; see job_registry.h.
#include "ddprun/rendezvous/job_registry.h"

namespace ddprun {

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

void JobRegistry::Drain(const std::string& job_id, JobRounds& job,
                        std::vector<RoutedEvent>& events) {
  for (auto& event : job.TakeEvents()) events.push_back({job_id, std::move(event)});
}

Status JobRegistry::Join(const std::string& job_id, const RendezvousSettings& settings,
                         const NodeDescription& node, RendezvousTime now,
                         std::vector<RoutedEvent>& events) {
  if (job_id.empty()) return InvalidArgumentError("a job id is required (--rdzv_id)");
  std::lock_guard lock(mu_);
  JobRounds* job = Find(job_id);
  if (job == nullptr) {
    if (Status s = ValidateRendezvousSettings(settings); !s.ok()) return s;
    job = jobs_.emplace(job_id, std::make_unique<JobRounds>(settings, now)).first->second.get();
  }
  Status status = job->Join(node, now);
  Drain(job_id, *job, events);
  return status;
}

Status JobRegistry::Heartbeat(const std::string& job_id, const std::string& node_id,
                              RendezvousTime now) {
  std::lock_guard lock(mu_);
  JobRounds* job = Find(job_id);
  if (job == nullptr) return NotFoundError("job '" + job_id + "' is unknown; join it first");
  return job->Heartbeat(node_id, now);
}

void JobRegistry::Update(const std::string& job_id, const std::function<void(JobRounds&)>& change,
                         std::vector<RoutedEvent>& events) {
  std::lock_guard lock(mu_);
  if (JobRounds* job = Find(job_id)) {
    change(*job);
    Drain(job_id, *job, events);
  }
}

void JobRegistry::WorkerFailed(const std::string& job_id, const std::string& node_id, int64_t round,
                               const std::string& description, RendezvousTime now,
                               std::vector<RoutedEvent>& events) {
  Update(
      job_id, [&](JobRounds& job) { job.WorkerFailed(node_id, round, description, now); }, events);
}

void JobRegistry::Succeeded(const std::string& job_id, const std::string& node_id, int64_t round,
                            std::vector<RoutedEvent>& events) {
  Update(
      job_id, [&](JobRounds& job) { job.NodeSucceeded(node_id, round); }, events);
}

void JobRegistry::Leave(const std::string& job_id, const std::string& node_id, RendezvousTime now,
                        std::vector<RoutedEvent>& events) {
  Update(
      job_id, [&](JobRounds& job) { job.Leave(node_id, now); }, events);
}

void JobRegistry::Tick(RendezvousTime now, std::vector<RoutedEvent>& events) {
  std::lock_guard lock(mu_);
  for (auto& [job_id, job] : jobs_) {
    job->Tick(now);
    Drain(job_id, *job, events);
  }
}

std::optional<RendezvousTime> JobRegistry::NextDeadline() const {
  std::lock_guard lock(mu_);
  std::optional<RendezvousTime> next;
  for (const auto& [job_id, job] : jobs_) {
    auto deadline = job->NextDeadline();
    if (deadline && (!next || *deadline < *next)) next = deadline;
  }
  return next;
}

}  // namespace ddprun
