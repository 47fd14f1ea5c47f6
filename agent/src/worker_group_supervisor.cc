// WorkerGroupSupervisor; see worker_group_supervisor.h.
#include "ddprun/agent/worker_group_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>

#include "ddprun/agent/output_pump.h"
#include "ddprun/agent/worker_process.h"
#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"

namespace ddprun {
namespace {

enum class Phase {
  kWaitingForRound,   // no workers; the coordinator will send the next round
  kRunning,           // the round's workers run
  kStopping,          // stopping the workers; after_stop says what follows
  kAwaitingDecision,  // stopped after a failure this node reported; restart or give up follows
  kSucceeded,         // every worker of this node exited 0; the job's outcome follows
  kDone,
};

// What follows once the workers have stopped.
enum class AfterStop {
  kUndecided,  // the coordinator has not answered the failure report yet
  kRejoin,     // join the next round
  kGiveUp,     // print the failure report and exit
  kExit,       // a stop signal: exit with 128 + signal
};

struct Worker {
  WorkerPlacement placement;
  pid_t pid = -1;
  bool alive = false;
  bool succeeded = false;
  std::string error_file;
  std::shared_ptr<OutputPump> stdout_pump;
  std::shared_ptr<OutputPump> stderr_pump;
};

int OpenLogFile(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

}  // namespace

struct WorkerGroupSupervisor::Impl {
  Impl(boost::asio::io_context& io_context, SupervisorOptions supervisor_options)
      : io(io_context),
        options(std::move(supervisor_options)),
        coordinator(*options.coordinator),
        children(io, SIGCHLD),
        stop_signals(io, SIGINT, SIGTERM, SIGHUP),
        stop_timer(io),
        log(GetLogger("agent")) {
    stop_signals.add(SIGQUIT);
  }

  boost::asio::io_context& io;
  SupervisorOptions options;
  RoundCoordinator& coordinator;
  boost::asio::signal_set children;
  boost::asio::signal_set stop_signals;
  boost::asio::steady_timer stop_timer;
  std::shared_ptr<spdlog::logger> log;

  Phase phase = Phase::kWaitingForRound;
  AfterStop after_stop = AfterStop::kUndecided;
  NodeAssignment round;  // the round the workers run (or last ran)
  int attempt = -1;      // rounds this agent has started workers for, minus one: names log dirs
  bool interrupted = false;
  int interrupt_signal = 0;
  int stop_signal = SIGTERM;  // what the current stop sent first
  std::vector<Worker> workers;
  std::vector<WorkerFailure> failures;  // of the current round; root cause first
  std::string job_failure;              // the job's root cause, from the coordinator
  int exit_status = 1;
  std::string failure_report;  // printed after the workers' last output

  void Begin() {
    coordinator.Start(
        {[this](const NodeAssignment& next) { OnRound(next); },
         [this](const std::string& reason) { OnRestart(reason); }, [this] { OnJobComplete(); },
         [this](const std::string& reason, int status) { OnJobFailed(reason, status); }});
  }

  void OnRound(const NodeAssignment& next) {
    if (phase != Phase::kWaitingForRound || interrupted) {
      log->warn("round {} is ready, but this node is not waiting for one; ignored", next.round);
      return;
    }
    round = next;
    StartAttempt();
  }

  void OnRestart(const std::string& reason) {
    if (interrupted || phase == Phase::kDone) return;
    log->warn("restarting the workers: {}", reason);
    switch (phase) {
      case Phase::kRunning:
        StopThen(AfterStop::kRejoin);
        return;
      case Phase::kStopping:
        if (after_stop == AfterStop::kUndecided) after_stop = AfterStop::kRejoin;
        return;
      case Phase::kAwaitingDecision:
      case Phase::kSucceeded:
      case Phase::kWaitingForRound:
        phase = Phase::kWaitingForRound;
        coordinator.JoinNextRound();
        return;
      case Phase::kDone:
        return;
    }
  }

  void OnJobComplete() {
    if (phase == Phase::kDone || interrupted) return;  // interrupted: exits 128 + signal
    if (AliveCount() > 0) {
      log->error("the job was declared complete while this node's workers run; stopping them");
      job_failure = "the job was declared complete while workers of " + options.host + " ran";
      StopThen(AfterStop::kGiveUp);
      return;
    }
    Finish(0);
  }

  void OnJobFailed(const std::string& reason, int status) {
    if (phase == Phase::kDone) return;
    job_failure = reason;
    exit_status = status;
    if (interrupted) return;  // exits with 128 + signal once stopped
    if (phase == Phase::kRunning) {
      StopThen(AfterStop::kGiveUp);
    } else if (phase == Phase::kStopping) {
      after_stop = AfterStop::kGiveUp;
    } else {
      GiveUp();
    }
  }

  // Stops the running workers with SIGTERM; `then` follows.
  void StopThen(AfterStop then) {
    phase = Phase::kStopping;
    after_stop = then;
    StopGroup(SIGTERM);
  }

  void WatchChildren() {
    children.async_wait([this](const boost::system::error_code& error, int) {
      if (error) return;
      ReapChildren();
      if (phase != Phase::kDone) WatchChildren();
    });
  }

  void WatchStopSignals() {
    stop_signals.async_wait([this](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      OnStopSignal(signal_number);
      if (phase != Phase::kDone) WatchStopSignals();
    });
  }

  size_t AliveCount() const {
    size_t alive = 0;
    for (const auto& worker : workers) alive += worker.alive ? 1 : 0;
    return alive;
  }

  void StartAttempt() {
    phase = Phase::kRunning;
    ++attempt;
    failures.clear();  // the report covers the round that gave up; earlier ones were restarted
    workers.clear();
    workers.resize(static_cast<size_t>(options.nproc));
    log->info("starting {} worker(s) of round {}, ranks {}..{} of {}", options.nproc, round.round,
              round.first_global_rank, round.first_global_rank + options.nproc - 1,
              round.world_size);
    for (int local_rank = 0; local_rank < options.nproc; ++local_rank) {
      Worker& worker = workers[static_cast<size_t>(local_rank)];
      worker.placement = {local_rank,       round.first_global_rank + local_rank,
                          round.group_rank, options.nproc,
                          round.world_size, round.group_world_size};
      if (Status s = StartWorker(worker); !s.ok()) {
        RecordSpawnFailure(worker, s);
        HandleFailure();
        return;
      }
    }
  }

  Status StartWorker(Worker& worker) {
    const int local_rank = worker.placement.local_rank;
    const RunLogLayout& layout = options.log_layout;
    if (Status s = layout.PrepareWorkerDir(attempt, local_rank); !s.ok()) return s;
    worker.error_file = layout.ErrorFile(attempt, local_rank);
    auto environment = options.environment(worker.placement, round, worker.error_file);
    auto spawned = SpawnWorker(options.worker_argv, ToEnvp(environment));
    if (!spawned.ok()) return spawned.status();
    worker.pid = spawned->pid;
    worker.alive = true;

    const StdStreams redirected = options.redirects.For(local_rank);
    const StdStreams teed = options.tee.For(local_rank);
    const bool shown =
        !options.local_ranks_filter || options.local_ranks_filter->contains(local_rank);
    const std::string prefix = "[rank" + std::to_string(worker.placement.global_rank) + "]: ";
    auto make_pump = [&](int pipe_fd, StdStreams stream, int console_fd, const std::string& file) {
      const bool to_file = Includes(redirected, stream) || Includes(teed, stream);
      const bool to_console = shown && !Includes(redirected, stream);
      int file_fd = -1;
      if (to_file && (file_fd = OpenLogFile(file)) < 0) {
        log->error("cannot open {}: {}; rank {} output goes to the console only", file,
                   std::strerror(errno), worker.placement.global_rank);
      }
      // A log file that cannot be opened falls back to the console: output is never dropped.
      const bool console = to_console || (to_file && file_fd < 0);
      auto pump =
          std::make_shared<OutputPump>(io, pipe_fd, console ? console_fd : -1, prefix, file_fd);
      pump->Start();
      return pump;
    };
    worker.stdout_pump = make_pump(spawned->stdout_fd, StdStreams::kStdout, STDOUT_FILENO,
                                   layout.StdoutLog(attempt, local_rank));
    worker.stderr_pump = make_pump(spawned->stderr_fd, StdStreams::kStderr, STDERR_FILENO,
                                   layout.StderrLog(attempt, local_rank));
    return Status::Ok();
  }

  // A failure of `worker` observed now.
  WorkerFailure NewFailure(const Worker& worker) const {
    WorkerFailure failure;
    failure.time = std::chrono::system_clock::now();
    failure.host = options.host;
    failure.global_rank = worker.placement.global_rank;
    failure.local_rank = worker.placement.local_rank;
    failure.pid = worker.pid;
    failure.error_file = worker.error_file;
    return failure;
  }

  void RecordSpawnFailure(const Worker& worker, const Status& status) {
    WorkerFailure failure = NewFailure(worker);
    failure.spawn_error = status.message();
    failures.push_back(std::move(failure));
    log->error("could not start rank {}: {}", worker.placement.global_rank, status.message());
  }

  void ReapChildren() {
    while (true) {
      int wait_status = 0;
      const pid_t pid = ::waitpid(-1, &wait_status, WNOHANG);
      if (pid <= 0) return;  // none left to reap now (0), or no children at all (-1, ECHILD)
      for (auto& worker : workers) {
        if (worker.alive && worker.pid == pid) {
          OnWorkerExit(worker, wait_status);
          break;
        }
      }
    }
  }

  void OnWorkerExit(Worker& worker, int wait_status) {
    worker.alive = false;
    worker.stdout_pump->Finish();
    worker.stderr_pump->Finish();
    const bool success = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
    if (phase == Phase::kRunning) {
      if (success) {
        worker.succeeded = true;
        for (const auto& other : workers) {
          if (!other.succeeded) return;
        }
        phase = Phase::kSucceeded;
        coordinator.ReportSuccess(round);
        return;
      }
      RecordFailure(worker, wait_status);
      HandleFailure();
      return;
    }
    // Stopping. A worker that ended by its own failure, not by our signals, is still reported.
    const bool stopped_by_us = WIFSIGNALED(wait_status) && (WTERMSIG(wait_status) == stop_signal ||
                                                            WTERMSIG(wait_status) == SIGKILL);
    if (!success && !stopped_by_us && !interrupted) RecordFailure(worker, wait_status);
    if (AliveCount() == 0) OnGroupStopped();
  }

  void RecordFailure(const Worker& worker, int wait_status) {
    WorkerFailure failure = NewFailure(worker);
    if (WIFSIGNALED(wait_status)) {
      failure.term_signal = WTERMSIG(wait_status);
    } else {
      failure.exit_code = WEXITSTATUS(wait_status);
    }
    // What the worker wrote to its error file, if anything (64 KiB at most).
    failure.error_file_text = ReadFileHead(worker.error_file, 64 << 10).value_or("");
    log->warn("rank {} (pid {}) failed: {}", failure.global_rank, failure.pid,
              DescribeExit(failure));
    failures.push_back(std::move(failure));
  }

  // The first failure of a running round: reported, and the workers stopped while the
  // coordinator decides.
  void HandleFailure() {
    const WorkerFailure& root_cause = failures.front();
    coordinator.ReportFailure(round, DescribeFailure(root_cause), ExitStatusOf(root_cause));
    StopThen(AfterStop::kUndecided);
  }

  void OnStopSignal(int signal_number) {
    if (phase == Phase::kDone) return;
    if (interrupted) {
      log->warn("received {} again; killing the workers now", SignalName(signal_number));
      SignalAlive(SIGKILL);
      return;
    }
    log->warn("received {}; stopping the workers", SignalName(signal_number));
    interrupted = true;
    interrupt_signal = signal_number;
    const bool workers_alive = AliveCount() > 0;
    if (workers_alive) {
      phase = Phase::kStopping;
      after_stop = AfterStop::kExit;
      StopGroup(signal_number);
    }
    coordinator.Leave();
    if (!workers_alive) Finish(128 + signal_number);
  }

  void SignalAlive(int signal_number) {
    for (const auto& worker : workers) {
      if (worker.alive && ::kill(-worker.pid, signal_number) != 0 && errno != ESRCH) {
        log->error("cannot send {} to worker pid {}: {}", SignalName(signal_number), worker.pid,
                   std::strerror(errno));
      }
    }
  }

  // Sends signal_number to every live worker's process group; SIGKILL after shutdown_timeout;
  // gives up on survivors kill_timeout later. OnGroupStopped follows in every case.
  void StopGroup(int signal_number) {
    stop_signal = signal_number;
    if (AliveCount() == 0) {
      boost::asio::post(io, [this] { OnGroupStopped(); });
      return;
    }
    SignalAlive(signal_number);
    stop_timer.expires_after(options.shutdown_timeout);
    stop_timer.async_wait([this](const boost::system::error_code& error) {
      if (error || AliveCount() == 0) return;
      log->warn("{} worker(s) still running {} ms after {}; sending SIGKILL", AliveCount(),
                options.shutdown_timeout.count(), SignalName(stop_signal));
      SignalAlive(SIGKILL);
      stop_timer.expires_after(options.kill_timeout);
      stop_timer.async_wait([this](const boost::system::error_code& kill_error) {
        if (kill_error || AliveCount() == 0) return;
        for (auto& worker : workers) {
          if (!worker.alive) continue;
          log->error(
              "worker pid {} has not exited {} ms after SIGKILL (stuck in the kernel?); "
              "abandoning it",
              worker.pid, options.kill_timeout.count());
          worker.alive = false;
          worker.stdout_pump->Finish();
          worker.stderr_pump->Finish();
        }
        OnGroupStopped();
      });
    });
  }

  void OnGroupStopped() {
    if (phase != Phase::kStopping) return;
    stop_timer.cancel();
    switch (after_stop) {
      case AfterStop::kRejoin:
        phase = Phase::kWaitingForRound;
        coordinator.JoinNextRound();
        return;
      case AfterStop::kUndecided:
        phase = Phase::kAwaitingDecision;
        return;
      case AfterStop::kGiveUp:
        GiveUp();
        return;
      case AfterStop::kExit:
        Finish(128 + interrupt_signal);
        return;
    }
  }

  // The job failed: the report, once, and the job's exit status. When this node's own failure is
  // the job's root cause the report details it; otherwise it names the root cause the
  // coordinator gave, and lists this node's failures after it.
  void GiveUp() {
    const bool own_root_cause =
        !failures.empty() && job_failure.rfind(DescribeFailure(failures.front()), 0) == 0;
    failure_report =
        FormatFailureReport(options.program_label, failures, round.restart_count,
                            coordinator.max_restarts(), own_root_cause ? "" : job_failure);
    Finish(exit_status);
  }

  // Ends the run: cancels every watch, so io.run() returns once the output pumps have
  // forwarded what the workers wrote.
  void Finish(int status) {
    phase = Phase::kDone;
    exit_status = status;
    boost::system::error_code ignored;
    children.cancel(ignored);
    stop_signals.cancel(ignored);
    stop_timer.cancel();
  }
};

WorkerGroupSupervisor::WorkerGroupSupervisor(boost::asio::io_context& io, SupervisorOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(options))) {}

WorkerGroupSupervisor::~WorkerGroupSupervisor() = default;

int WorkerGroupSupervisor::Run() {
  impl_->WatchChildren();
  impl_->WatchStopSignals();
  impl_->Begin();
  impl_->io.run();
  if (!impl_->failure_report.empty()) {
    (void)WriteAll(STDERR_FILENO, impl_->failure_report, "the failure report to stderr");
  }
  return impl_->exit_status;
}

bool WorkerGroupSupervisor::interrupted() const { return impl_->interrupted; }

}  // namespace ddprun
