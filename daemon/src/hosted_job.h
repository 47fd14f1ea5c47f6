// HostedJob: one job's node agent, run by the daemon: the agent process (`ddprun` with the
// job's options, a child of the daemon), the recent output it wrote, and how it ended.
//
// One thread per job spawns the agent and lives until it has exited: the agent's parent-death
// signal is tied to that thread, so the agent (and, through its own parent-death signals and
// cgroup, its workers) dies with the daemon, and never before. Everything else may be called
// from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"
#include "output_ring.h"

namespace ddprun {

// What a job is, as `ddprun status` shows it.
struct HostedJobDescription {
  std::string job_id;
  std::vector<std::string> hosts;
  int host_index = 0;
  std::vector<std::string> program;
  std::string working_dir;
  std::string rendezvous;  // the job's --rdzv_endpoint
  std::string submitter;   // the caller's identity, as logged
  int64_t start_time_unix_ms = 0;
  // From a cancel's SIGTERM to the agent until its process group is killed: more than the
  // agent's own --shutdown_timeout for its workers.
  std::chrono::milliseconds cancel_grace{45'000};
};

struct AgentLaunch {
  std::vector<std::string> argv;         // the agent program's path first
  std::vector<std::string> environment;  // "NAME=value", exactly the agent's environment
  std::string working_dir;
  bool forward_input = false;  // its stdin a pipe fed through WriteInput, else /dev/null
  // Where the agent reads its workers' terminal size when it gets SIGWINCH (named to it by
  // DDPRUN_TERMINAL_SIZE_FILE, in `environment`); empty: its workers have no terminals.
  std::string terminal_size_file;
  // Called on the job's thread once the agent has exited and been reaped (not when it could not
  // start); may be empty.
  std::function<void()> on_ended;
};

struct AgentExit {
  int exit_code = -1;   // when it exited
  int term_signal = 0;  // when a signal ended it
  bool cancelled = false;
};

// What a reader gets: output from its offset on, the end of what exists, and the exit once the
// agent has ended and its output is all in.
struct HostedJobRead {
  OutputRead output;
  int64_t end = 0;
  std::optional<AgentExit> exit;
};

class HostedJob {
 public:
  // Starts the agent. The error says why it could not start (nothing is left running then).
  static Result<std::shared_ptr<HostedJob>> Start(HostedJobDescription description,
                                                  AgentLaunch launch, size_t output_capacity);
  // Waits for the agent's thread: call Cancel first, or wait for the end.
  ~HostedJob();
  HostedJob(const HostedJob&) = delete;
  HostedJob& operator=(const HostedJob&) = delete;

  const HostedJobDescription& description() const { return description_; }
  pid_t agent_pid() const { return pid_; }

  // Asks the agent to stop (SIGTERM: its bounded group stop) and kills its process group after
  // `grace` if it has not ended. Returns at once; does nothing once it has ended.
  void Cancel(std::chrono::milliseconds grace) EXCLUDES(mu_);
  // Whether it has ended by `deadline`.
  bool WaitEnded(std::chrono::steady_clock::time_point deadline) EXCLUDES(mu_);
  // Waits until there is output from `from` on, the agent has ended, or `deadline`; returns at
  // most about `max_bytes`.
  HostedJobRead Read(int64_t from, size_t max_bytes, std::chrono::steady_clock::time_point deadline)
      EXCLUDES(mu_);
  std::optional<AgentExit> exit() const EXCLUDES(mu_);

  // The agent's input (forward_input): claimed by one Input stream at a time, written (blocking
  // while the agent does not read), and closed at the stream's end (the agent sees end of file).
  bool ClaimInput() EXCLUDES(input_mu_);
  Status WriteInput(std::string_view data) EXCLUDES(input_mu_);
  void CloseInput() EXCLUDES(input_mu_);

  // The submitter's terminal is now `size`: written where the agent reads it, and the agent told
  // (SIGWINCH), which resizes its workers' terminals. FAILED_PRECONDITION when they have none or
  // the agent has ended.
  Status ResizeTerminal(TerminalSize size) EXCLUDES(mu_);

 private:
  HostedJob(HostedJobDescription description, size_t output_capacity);
  // The job's thread: spawns, then relays output until the agent has exited.
  void Run(AgentLaunch launch, std::promise<Status>* started);
  void Relay(int stdout_fd, int stderr_fd);
  void Reap();
  // When a cancel's grace ends, if one was asked for.
  std::optional<std::chrono::steady_clock::time_point> KillDeadline() EXCLUDES(mu_);
  bool KillDue() EXCLUDES(mu_);
  void Wake();

  const HostedJobDescription description_;
  std::string terminal_size_file_;  // set before Start returns; removed with the job
  pid_t pid_ = -1;                  // set before Start returns
  int wake_fd_ = -1;  // an eventfd Cancel writes, so the job's thread sees a new kill deadline
  std::thread thread_;

  mutable Mutex mu_;
  std::condition_variable_any changed_;
  OutputRing output_ GUARDED_BY(mu_);
  bool cancelled_ GUARDED_BY(mu_) = false;
  std::optional<std::chrono::steady_clock::time_point> kill_at_ GUARDED_BY(mu_);
  std::optional<AgentExit> exit_ GUARDED_BY(mu_);

  Mutex input_mu_;                           // apart from mu_: a write may block
  int input_fd_ GUARDED_BY(input_mu_) = -1;  // the agent's stdin pipe, until closed
  bool input_claimed_ GUARDED_BY(input_mu_) = false;
};

}  // namespace ddprun
