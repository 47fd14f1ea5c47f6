// JobTable: the jobs a daemon runs for submitters, and the policy that decides whether one may
// start: the daemon's user (a root daemon runs jobs only where its configuration allows it), a
// job id that is not running here already, a working directory and a program that exist on this
// host. Thread-safe; gRPC's threads call it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ddprun/agent/program_resolution.h"
#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"
#include "hosted_job.h"

namespace ddprun {

struct JobTableOptions {
  std::string agent_program;  // the `ddprun` that runs each job's node agent
  std::string token_file;     // given to the agents, for the job's rendezvous; none: no jobs
  bool allow_root_jobs = false;
  size_t output_buffer_bytes = 4 << 20;  // recent output kept per job
  // SIGTERM to SIGKILL of an agent, beyond its --shutdown_timeout (JobStart).
  std::chrono::milliseconds cancel_margin{15'000};
  size_t kept_ended_jobs = 64;  // ended jobs kept for attach, logs and status
  // Called with a job's id, on its own thread, once its agent has ended; may be empty.
  std::function<void(const std::string& job_id)> on_ended;
};

// A submitter's request, as the service received it.
struct JobStart {
  HostedJobDescription description;
  // ddprun's options, without the program: passed on to the agent, read by nothing here.
  std::vector<std::string> agent_args;
  std::map<std::string, std::string> environment;  // set over the daemon's own
  // How the agent will run the program, so that it is looked for as the agent will.
  ProgramMode program_mode = ProgramMode::kAsTyped;
  // The agent's --shutdown_timeout: a cancel gives it this and the margin before SIGKILL.
  std::chrono::milliseconds shutdown_timeout{30'000};
  bool forward_input = false;  // the agent's stdin fed by an Input stream
};

class JobTable {
 public:
  explicit JobTable(JobTableOptions options);
  ~JobTable();  // cancels what still runs and waits for it

  // Whether `start` could start now. FAILED_PRECONDITION saying why not (one line, naming what
  // is missing on this host), ALREADY_EXISTS for a job id that runs here, INVALID_ARGUMENT for a
  // malformed request, UNAVAILABLE once the daemon stops. The file system is looked at without
  // the table's lock: a hung mount delays only this call.
  Status Check(const JobStart& start) const EXCLUDES(mu_);
  // Checks, then starts the agent (the id is reserved meanwhile, the lock not held).
  Result<std::shared_ptr<HostedJob>> Start(JobStart start) EXCLUDES(mu_);
  // Null when this daemon holds no job of that id.
  std::shared_ptr<HostedJob> Find(const std::string& job_id) const EXCLUDES(mu_);
  std::vector<std::shared_ptr<HostedJob>> All() const EXCLUDES(mu_);
  // Cancels `job` and waits for its agent to end (the grace, and a little more, at most).
  AgentExit CancelAndWait(HostedJob& job) const;
  // Starts no more jobs, then cancels every running one and waits for them all: the daemon is
  // stopping.
  void CancelAll() EXCLUDES(mu_);

 private:
  // What needs the table: the daemon's state and the job id (not running, not starting).
  Status CheckAdmission(const JobStart& start) const REQUIRES(mu_);
  // What needs only the request and this host: the request's form, the directory, the program.
  Status CheckRequest(const JobStart& start) const;
  AgentLaunch LaunchOf(const JobStart& start) const;
  void Publish(const std::string& id, std::shared_ptr<HostedJob> job) REQUIRES(mu_);

  const JobTableOptions options_;
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<HostedJob>> jobs_ GUARDED_BY(mu_);
  std::vector<std::string> start_order_ GUARDED_BY(mu_);  // to forget the oldest ended first
  std::set<std::string> starting_ GUARDED_BY(mu_);        // ids reserved by a Start under way
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace ddprun
