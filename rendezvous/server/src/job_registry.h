// JobRegistry: every job a rendezvous server serves, each a JobRounds, behind one lock. Plain and
// thread-safe; what nodes must be told comes back as RoutedEvents for the caller to deliver.
// Ended jobs are kept for kEndedJobRetention, so that a late node learns the job is over instead
// of starting it anew; then they are forgotten (a long-lived daemon does not grow without bound,
// and the job id may be used again).
//
// Store credentials: with a mint, each job gets one when it is created (or adopts the one a
// resuming node's workers hold, when the server lost the job), every RoundReady carries it to
// the job's nodes for their workers, and it is revoked the moment the job ends. A server whose
// jobs' credentials are shared with other servers (shared_credentials.h) sets each job's before
// its first join (PrepareTakeover) and hears of each revocation (`on_revoked`).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/thread_annotations.h"
#include "deadline_index.h"
#include "job_rounds.h"

namespace ddprun {

// A job this server takes over from another server sharing its store (job_leadership.h).
struct JobTakeover {
  std::string credential;  // the job's store credential, which its workers may hold; "": none
  std::optional<JobRounds::Record> record;  // what the job's last leader recorded, if anything
};

struct RoutedEvent {
  std::string job_id;
  NodeEvent event;
};

// What one server's jobs may hold at most: the bounds that keep a daemon's memory bounded
// whatever its clients send. docs/limits.md lists them with the store's (KeyValueLimits).
struct JobLimits {
  size_t max_jobs = 10'000;          // held at once; ended ones are forgotten early to make room
  int max_nodes_per_job = 65'536;    // a job's max_nodes
  int max_workers_per_node = 4'096;  // a node's nproc (so a world size fits in an int)
  // Nodes a job holds beyond its max_nodes: agents that wait for a round with room (elastic
  // jobs) or that rejoin before their old entry is lost.
  int waiting_nodes_beyond_max = 64;
  size_t max_id_bytes = 256;  // a job id, a node id, a host, a scheduler's description
  std::chrono::milliseconds max_timeout{std::chrono::hours(7 * 24)};  // any of a job's timeouts
};

class JobRegistry {
 public:
  static constexpr std::chrono::minutes kEndedJobRetention{10};
  // Makes a new job's store credential (NewSecretToken in the server).
  using CredentialMint = std::function<Result<std::string>()>;
  // A job's credential was revoked (the job ended). Runs under the registry's lock: it must only
  // hand the job id off.
  using CredentialRevoked = std::function<void(const std::string& job_id)>;

  // No `mint`: jobs have no credentials (the server needs no token).
  explicit JobRegistry(JobLimits limits = {}, CredentialMint mint = {},
                       CredentialRevoked on_revoked = {})
      : limits_(limits), mint_(std::move(mint)), on_revoked_(std::move(on_revoked)) {}

  // The first join of a job creates it with `settings` (INVALID_ARGUMENT when they are not
  // sensible or over `limits`); later joins must ask for the same number of nodes
  // (INVALID_ARGUMENT otherwise). RESOURCE_EXHAUSTED when the server holds max_jobs jobs that
  // have not ended, or the job holds max_nodes + waiting_nodes_beyond_max nodes.
  // `running` set: the node reconnects while running that round (JobRounds::Resume).
  Status Join(const std::string& job_id, const RendezvousSettings& settings,
              const NodeDescription& node, const std::optional<RunningRound>& running,
              RendezvousTime now, std::vector<RoutedEvent>& events);
  // NOT_FOUND when the job or the node is unknown (a lost node must join again).
  // `progress` rides on the heartbeat; a hang it reveals is in `events`.
  Status Heartbeat(const std::string& job_id, const std::string& node_id, RendezvousTime now,
                   const std::optional<NodeProgress>& progress, std::vector<RoutedEvent>& events);
  void WorkerFailed(const std::string& job_id, const std::string& node_id, int64_t round,
                    const WorkerFailure& failure, int exit_status, RendezvousTime now,
                    std::vector<RoutedEvent>& events);
  void Succeeded(const std::string& job_id, const std::string& node_id, int64_t round,
                 RendezvousTime now, std::vector<RoutedEvent>& events);
  void Leave(const std::string& job_id, const std::string& node_id, RendezvousTime now,
             std::vector<RoutedEvent>& events);
  void Disconnected(const std::string& job_id, const std::string& node_id, RendezvousTime now);
  // Applies every job's passed deadlines, and forgets jobs that ended kEndedJobRetention ago
  // (their ids are added to `forgotten`, for the caller to drop their keys).
  void Tick(RendezvousTime now, std::vector<RoutedEvent>& events,
            std::vector<std::string>* forgotten = nullptr);
  // The earliest deadline of any job.
  std::optional<RendezvousTime> NextDeadline() const;
  // Every job has ended (complete or failed), or there is none.
  bool AllEnded() const;
  // Every job, or the one named (NOT_FOUND when it is unknown).
  Result<std::vector<JobSnapshot>> Snapshot(const std::string& job_id, RendezvousTime now) const;
  // True when `presented` is the store credential of job `job_id` and the job has not ended.
  // Compares in constant time.
  bool AcceptsStoreCredential(const std::string& job_id, std::string_view presented) const;
  // Job `job_id` is taken over, before its first join on this server: it gets `takeover`'s
  // credential (with a mint) and starts from its record (JobRounds::TakeOver) when created. A
  // job this server holds already keeps what it has.
  void PrepareTakeover(const std::string& job_id, JobTakeover takeover);
  // Forgets every job that has ended, now (the server stops); their ids, for the caller to drop
  // their keys.
  std::vector<std::string> ForgetEnded();
  // Job `job_id`'s rounds as they stand, for the record; nullopt when the job is unknown.
  std::optional<JobRounds::Record> Record(const std::string& job_id) const;
  // Forgets job `job_id` without ending it: another server leads it now (job_leadership.h), and
  // its nodes re-join there. Its store keys stay.
  void Abandon(const std::string& job_id);

 private:
  JobRounds* Find(const std::string& job_id) REQUIRES(mu_);
  // Collects the job's events and notes when it ended.
  void Drain(const std::string& job_id, JobRounds& job, RendezvousTime now,
             std::vector<RoutedEvent>& events) REQUIRES(mu_);
  // Applies `change` to a known job under the lock and collects its events; unknown jobs are
  // ignored (a report for a job that was never joined changes nothing).
  void Update(const std::string& job_id, RendezvousTime now,
              const std::function<void(JobRounds&)>& change, std::vector<RoutedEvent>& events)
      EXCLUDES(mu_);

  // Makes room for a new job by forgetting the job that ended first; false when none has ended.
  bool ForgetOldestEnded(std::vector<std::string>& forgotten) REQUIRES(mu_);
  // Sets the job's entry in the deadline index: its next deadline (for an ended job, the end of
  // its retention). Called by Drain, which follows every change of a job; O(log jobs), as
  // JobRounds::NextDeadline is O(1): it runs for every heartbeat.
  void Reindex(const std::string& job_id, const JobRounds& job) REQUIRES(mu_);
  void Forget(const std::string& job_id) REQUIRES(mu_);
  // Gives a job created by this join its credential: the resuming node's (`running`), as long
  // as none was handed out yet, else a new one. Without a mint, none.
  Status SetCredential(const std::string& job_id, const std::optional<RunningRound>& running)
      REQUIRES(mu_);

  struct Credential {
    std::string secret;
    bool issued = false;  // a RoundReady carried it: the job's workers hold it
  };

  const JobLimits limits_;
  const CredentialMint mint_;
  const CredentialRevoked on_revoked_;
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<JobRounds>> jobs_ GUARDED_BY(mu_);
  // Jobs forgotten to make room, for the next Tick to report (their keys are dropped then).
  std::vector<std::string> forgotten_early_ GUARDED_BY(mu_);
  std::map<std::string, RendezvousTime> ended_at_ GUARDED_BY(mu_);
  DeadlineIndex deadlines_ GUARDED_BY(mu_);                        // of the jobs
  std::map<std::string, Credential> credentials_ GUARDED_BY(mu_);  // of the jobs not ended
  // Records of jobs taken over (PrepareTakeover), until the job is created.
  std::map<std::string, JobRounds::Record> takeovers_ GUARDED_BY(mu_);
};

// INVALID_ARGUMENT naming the first setting that makes no sense or is over `limits`.
Status ValidateRendezvousSettings(const RendezvousSettings& settings, const JobLimits& limits = {});

}  // namespace ddprun
