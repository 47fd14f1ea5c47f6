// JobRegistry; see job_registry.h.
#include "job_registry.h"

#include <algorithm>

#include "ddprun/base/secret_token.h"
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

// INVALID_ARGUMENT when `what` is longer than the limit.
Status CheckIdLength(const char* what, const std::string& id, const JobLimits& limits) {
  if (id.size() <= limits.max_id_bytes) return Status::Ok();
  return InvalidArgumentError(std::string(what) + " of " + std::to_string(id.size()) +
                              " bytes is over the limit of " + std::to_string(limits.max_id_bytes));
}

Status ValidateNodeDescription(const std::string& job_id, const NodeDescription& node,
                               const JobLimits& limits) {
  RETURN_IF_ERROR(CheckIdLength("a job id", job_id, limits));
  RETURN_IF_ERROR(CheckIdLength("a node id", node.node_id, limits));
  RETURN_IF_ERROR(CheckIdLength("a host name", node.host, limits));
  RETURN_IF_ERROR(CheckIdLength("a scheduler's description", node.scheduler, limits));
  if (node.nproc > limits.max_workers_per_node) {
    return InvalidArgumentError("node " + node.host + " runs " + std::to_string(node.nproc) +
                                " workers; a node runs at most " +
                                std::to_string(limits.max_workers_per_node));
  }
  return Status::Ok();
}

}  // namespace

Status ValidateRendezvousSettings(const RendezvousSettings& settings, const JobLimits& limits) {
  if (settings.min_nodes < 1 || settings.max_nodes < settings.min_nodes) {
    return InvalidArgumentError("a job needs 1 <= min_nodes <= max_nodes, not " +
                                std::to_string(settings.min_nodes) + ":" +
                                std::to_string(settings.max_nodes));
  }
  if (settings.max_nodes > limits.max_nodes_per_job) {
    return InvalidArgumentError("a job of up to " + std::to_string(settings.max_nodes) +
                                " nodes is over the server's limit of " +
                                std::to_string(limits.max_nodes_per_job));
  }
  if (settings.max_restarts < 0) return InvalidArgumentError("max_restarts must be 0 or more");
  if (settings.join_timeout.count() <= 0 || settings.last_call_timeout.count() <= 0 ||
      settings.heartbeat_timeout.count() <= 0 || settings.hang.timeout.count() < 0 ||
      settings.hang.first_timeout.count() < 0) {
    return InvalidArgumentError("rendezvous timeouts must be positive");
  }
  if (!(settings.hang.straggler_ratio == 0 || settings.hang.straggler_ratio > 1) ||
      settings.hang.straggler_ratio > 1e6) {
    return InvalidArgumentError("straggler_ratio must be 0 (off) or above 1, not " +
                                std::to_string(settings.hang.straggler_ratio));
  }
  for (const auto timeout :
       {settings.join_timeout, settings.last_call_timeout, settings.heartbeat_timeout,
        settings.hang.timeout, settings.hang.first_timeout}) {
    if (timeout > limits.max_timeout) {
      return InvalidArgumentError(
          "a rendezvous timeout of " + std::to_string(timeout.count() / 1000) +
          " s is over the limit of " + std::to_string(limits.max_timeout.count() / 1000) + " s");
    }
  }
  return Status::Ok();
}

JobRounds* JobRegistry::Find(const std::string& job_id) {
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

void JobRegistry::Drain(const std::string& job_id, JobRounds& job, RendezvousTime now,
                        std::vector<RoutedEvent>& events) {
  auto credential = credentials_.find(job_id);
  for (auto& event : job.TakeEvents()) {
    if (event.type == NodeEvent::Type::kRoundReady && credential != credentials_.end()) {
      event.assignment.store_credential = credential->second.secret;
      credential->second.issued = true;
    }
    events.push_back({job_id, std::move(event)});
  }
  const bool ended =
      job.state() == JobRounds::State::kComplete || job.state() == JobRounds::State::kFailed;
  if (ended) {
    ended_at_.try_emplace(job_id, now);
    if (credential != credentials_.end()) {  // revoked at the end
      credentials_.erase(credential);
      if (on_revoked_) on_revoked_(job_id);
    }
  }
  Reindex(job_id, job);
}

void JobRegistry::Reindex(const std::string& job_id, const JobRounds& job) {
  std::optional<RendezvousTime> deadline = job.NextDeadline();
  if (auto ended = ended_at_.find(job_id); ended != ended_at_.end()) {
    deadline = ended->second + kEndedJobRetention;  // an ended job has no deadline of its own
  }
  if (deadline) {
    deadlines_.Set(job_id, *deadline);
  } else {
    deadlines_.Erase(job_id);
  }
}

void JobRegistry::Abandon(const std::string& job_id) {
  MutexLock lock(mu_);
  Forget(job_id);
}

void JobRegistry::Forget(const std::string& job_id) {
  deadlines_.Erase(job_id);
  jobs_.erase(job_id);
  ended_at_.erase(job_id);
  credentials_.erase(job_id);
  takeovers_.erase(job_id);
}

Status JobRegistry::SetCredential(const std::string& job_id,
                                  const std::optional<RunningRound>& running) {
  if (!mint_) return Status::Ok();
  auto [credential, created] = credentials_.try_emplace(job_id);
  if (running && !running->store_credential.empty() && !credential->second.issued) {
    if (running->store_credential.size() > limits_.max_id_bytes) {
      if (created) credentials_.erase(credential);
      return InvalidArgumentError(
          "a store credential of " + std::to_string(running->store_credential.size()) +
          " bytes is over the limit of " + std::to_string(limits_.max_id_bytes));
    }
    credential->second.secret = running->store_credential;
    return Status::Ok();
  }
  if (!created) return Status::Ok();
  auto secret = mint_();
  if (!secret.ok()) {
    credentials_.erase(credential);
    return secret.status();
  }
  credential->second.secret = std::move(secret).value();
  return Status::Ok();
}

void JobRegistry::PrepareTakeover(const std::string& job_id, JobTakeover takeover) {
  MutexLock lock(mu_);
  if (jobs_.count(job_id) > 0) return;
  if (mint_ && !takeover.credential.empty()) {
    credentials_[job_id] = Credential{.secret = std::move(takeover.credential), .issued = true};
  }
  if (takeover.record) {
    takeovers_[job_id] = std::move(*takeover.record);
  } else {
    takeovers_.erase(job_id);
  }
}

std::vector<std::string> JobRegistry::ForgetEnded() {
  MutexLock lock(mu_);
  std::vector<std::string> ended;
  for (const auto& [job_id, at] : ended_at_) ended.push_back(job_id);
  for (const std::string& job_id : ended) Forget(job_id);
  return ended;
}

std::optional<JobRounds::Record> JobRegistry::Record(const std::string& job_id) const {
  MutexLock lock(mu_);
  auto job = jobs_.find(job_id);
  if (job == jobs_.end()) return std::nullopt;
  return job->second->ToRecord();
}

bool JobRegistry::AcceptsStoreCredential(const std::string& job_id,
                                         std::string_view presented) const {
  MutexLock lock(mu_);
  auto credential = credentials_.find(job_id);
  return credential != credentials_.end() && !credential->second.secret.empty() &&
         SecretsEqual(presented, credential->second.secret);
}

Status JobRegistry::Join(const std::string& job_id, const RendezvousSettings& settings,
                         const NodeDescription& node, const std::optional<RunningRound>& running,
                         RendezvousTime now, std::vector<RoutedEvent>& events) {
  if (job_id.empty()) return InvalidArgumentError("a job id is required (--rdzv_id)");
  RETURN_IF_ERROR(ValidateNodeDescription(job_id, node, limits_));
  MutexLock lock(mu_);
  JobRounds* job = Find(job_id);
  if (job == nullptr) {
    RETURN_IF_ERROR(ValidateRendezvousSettings(settings, limits_));
    if (jobs_.size() >= limits_.max_jobs && !ForgetOldestEnded(forgotten_early_)) {
      return ResourceExhaustedError("this rendezvous server holds " + std::to_string(jobs_.size()) +
                                    " jobs that have not ended, its limit; try again later");
    }
    // Before the job exists: a refusal leaves none.
    RETURN_IF_ERROR(SetCredential(job_id, running));
    job = jobs_.emplace(job_id, std::make_unique<JobRounds>(settings, now)).first->second.get();
    if (auto taken = takeovers_.find(job_id); taken != takeovers_.end()) {
      job->TakeOver(taken->second);
      takeovers_.erase(taken);
    }
  }
  const size_t most_nodes =
      static_cast<size_t>(job->settings().max_nodes) + limits_.waiting_nodes_beyond_max;
  if (!job->HasNode(node.node_id) && job->node_count() >= most_nodes) {
    return ResourceExhaustedError("job '" + job_id + "' already holds " +
                                  std::to_string(job->node_count()) + " nodes (its " +
                                  std::to_string(job->settings().max_nodes) + " and " +
                                  std::to_string(limits_.waiting_nodes_beyond_max) +
                                  " waiting for room); node " + node.host + " is refused");
  }
  const RendezvousSettings& own = job->settings();
  if (settings.min_nodes != own.min_nodes || settings.max_nodes != own.max_nodes) {
    return InvalidArgumentError(
        "job '" + job_id + "' runs with --nnodes=" + std::to_string(own.min_nodes) + ":" +
        std::to_string(own.max_nodes) + " but node " + node.host +
        " asked for --nnodes=" + std::to_string(settings.min_nodes) + ":" +
        std::to_string(settings.max_nodes) + "; give every node the same --nnodes");
  }
  if (running && job->state() != JobRounds::State::kComplete &&
      job->state() != JobRounds::State::kFailed) {
    RETURN_IF_ERROR(SetCredential(job_id, running));  // adopts it while none was handed out
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

bool JobRegistry::ForgetOldestEnded(std::vector<std::string>& forgotten) {
  if (ended_at_.empty()) return false;
  auto oldest = std::min_element(ended_at_.begin(), ended_at_.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
  forgotten.push_back(oldest->first);
  Forget(oldest->first);
  return true;
}

void JobRegistry::Tick(RendezvousTime now, std::vector<RoutedEvent>& events,
                       std::vector<std::string>* forgotten) {
  MutexLock lock(mu_);
  for (std::string& job_id : forgotten_early_) {
    // Unless the id was joined again since: its keys are the new job's.
    if (forgotten != nullptr && !jobs_.contains(job_id)) forgotten->push_back(std::move(job_id));
  }
  forgotten_early_.clear();
  // Only the jobs with a deadline passed, each once: the others have nothing to do now, and a
  // server holds thousands of jobs.
  for (const std::string& job_id : deadlines_.Due(now)) {
    if (auto ended = ended_at_.find(job_id); ended != ended_at_.end()) {
      if (now - ended->second < kEndedJobRetention) continue;
      Forget(job_id);
      if (forgotten != nullptr) forgotten->push_back(job_id);
      continue;
    }
    JobRounds& job = *jobs_.at(job_id);
    job.Tick(now);
    Drain(job_id, job, now, events);
  }
}

std::optional<RendezvousTime> JobRegistry::NextDeadline() const {
  MutexLock lock(mu_);
  return deadlines_.Earliest();
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
                         job->Nodes(now), job->counters()});
  }
  if (!job_id.empty() && snapshots.empty()) {
    return NotFoundError("no job '" + job_id + "' on this rendezvous server");
  }
  return snapshots;
}

}  // namespace ddprun
