// WorkerGroupSupervisor; see worker_group_supervisor.h.
#include "ddprun/agent/worker_group_supervisor.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <cstring>

#include "ddprun/agent/input_forwarder.h"
#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/process_spawn.h"
#include "ddprun/base/rank_shared_memory.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/timeline.h"
#include "ddprun/base/worker_environment_contract.h"
#include "failure_capture.h"
#include "group_stop.h"
#include "hang_response.h"
#include "progress_monitor.h"
#include "python_hook.h"
#include "stop_signal_watch.h"
#include "supervisor_phases.h"
#include "warm_python_starts.h"

namespace ddprun {
namespace {

using Phase = SupervisorPhase;
using Action = SupervisorAction;

struct Worker {
  WorkerPlacement placement;
  pid_t pid = -1;
  bool alive = false;
  bool succeeded = false;
  std::string error_file;
  WorkerOutput output;
};

}  // namespace

struct WorkerGroupSupervisor::Impl {
  Impl(boost::asio::io_context& io_context, SupervisorOptions supervisor_options)
      : io(io_context),
        options(std::move(supervisor_options)),
        coordinator(*options.coordinator),
        processes(options.processes != nullptr ? *options.processes : SystemWorkerProcesses()),
        children(io, SIGCHLD),
        forwarded_signals(io, SIGUSR1, SIGUSR2),
        output_router(io, options.output),
        group_stop(io, processes, options.shutdown_timeout, options.kill_timeout),
        window_changes(io),
        progress_monitor(options.hang.output_is_progress),
        progress_timer(io),
        hang_response(io, options.host, options.hang.action, options.stacks_timeout,
                      {[this](std::vector<HungFailure> failed) { OnHangDecided(failed); },
                       [this] {
                         if (state.phase == Phase::kStopping) StopGroup(SIGTERM);
                       }}),
        log(GetLogger("agent")) {
    if (options.input == SupervisorOptions::Input::kRankZero &&
        InputForwarder::CanForward(STDIN_FILENO)) {
      input_forwarder = std::make_unique<InputForwarder>(
          io, STDIN_FILENO, [this] { output_router.LineEnteredByUser(); });
    }
    if (options.window_size) window_changes.add(SIGWINCH);
  }

  boost::asio::io_context& io;
  SupervisorOptions options;
  RoundCoordinator& coordinator;
  WorkerProcesses& processes;
  boost::asio::signal_set children;
  std::unique_ptr<StopSignalWatch> stop_signals;  // set by Run
  boost::asio::signal_set forwarded_signals;      // passed to every worker; the job runs on
  OutputRouter output_router;
  GroupStop group_stop;
  boost::asio::signal_set window_changes;
  std::unique_ptr<InputForwarder> input_forwarder;  // kRankZero from a terminal, pipe or socket
  ProgressMonitor progress_monitor;
  boost::asio::steady_timer progress_timer;  // samples progress while hang detection is on
  HangResponse hang_response;                // a hang's stacks, then its failures
  std::shared_ptr<spdlog::logger> log;
  std::unique_ptr<WarmPythonStarts> warm_starts;  // --python_preload
  bool round_waits_for_preload = false;

  // Where the run stands; only Carry changes it, with what supervisor_phases.h decides.
  SupervisorState state;
  NodeAssignment round;  // the round the workers run (or last ran)
  int attempt = -1;      // rounds this agent has started workers for, minus one: names log dirs
  int interrupt_signal = 0;
  std::vector<Worker> workers;
  std::vector<WorkerFailure> failures;          // of the current round; root cause first
  std::string job_failure;                      // the job's root cause, from the coordinator
  std::optional<WorkerFailure> job_root_cause;  // the worker failure behind it, if one is
  int exit_status = 1;
  std::string failure_report;  // printed after the workers' last output

  // `handler`, called after SignalsFirst (below).
  template <typename Handler>
  auto AfterSignals(Handler handler) {
    return [this, handler](const auto&... news) {
      SignalsFirst();
      handler(news...);
    };
  }

  void Begin() {
    // The coordinator's news is acted on after any stop signal this process got before it.
    coordinator.Start({AfterSignals([this](const NodeAssignment& next) { OnRound(next); }),
                       AfterSignals([this](const std::string& reason) { OnRestart(reason); }),
                       AfterSignals([this] { OnJobComplete(); }),
                       AfterSignals([this](const std::string& reason, int status,
                                           const std::optional<WorkerFailure>& root_cause) {
                         OnJobFailed(reason, status, root_cause);
                       }),
                       AfterSignals([this](const HangFinding& finding) { OnHang(finding); }),
                       [this](const StragglerNews& news) { OnStraggler(news); }});
    if (options.hang.samples_progress()) {
      if (Status s = WritePythonHook(PythonHookDir()); !s.ok()) {
        log->warn("no Python hook (stacks and progress of PyTorch workers): {}", s.message());
      }
      SampleProgressLater();
    }
    if (options.python_preload) {
      PythonPreloadSpec spec = *options.python_preload;
      spec.spawn = options.spawn;
      warm_starts = std::make_unique<WarmPythonStarts>(io, std::move(spec), log);
      warm_starts->Begin(ToEnvp(PreloadEnvironment()));
    }
  }

  // The workers' environment, less what differs by rank or round (the preloading
  // interpreter's): the variables Python reads at its start are the same.
  EnvironmentMap PreloadEnvironment() const {
    EnvironmentMap environment = options.environment(WorkerPlacement{}, NodeAssignment{}, "");
    if (options.hang.samples_progress()) AddPythonHook(PythonHookDir(), "", environment);
    return environment;
  }

  std::string PythonHookDir() const { return options.log_layout.run_dir() + "/python"; }

  // Every HangSettings::SamplingPeriod: a hang is seen within the timeout plus about that.
  void SampleProgressLater() {
    progress_timer.expires_after(options.hang.SamplingPeriod());
    progress_timer.async_wait([this](const boost::system::error_code& error) {
      if (error || state.phase == Phase::kDone) return;
      SampleProgress();
      SampleProgressLater();
    });
  }

  // The running workers' progress, to the coordinator (which looks for a hang and stragglers).
  // Not while a hang's stacks are collected: the debugger holds the workers still.
  void SampleProgress() {
    if (state.phase != Phase::kRunning || hang_response.collecting()) return;
    const auto now = ProgressMonitor::Clock::now();
    std::vector<RankProgress> ranks;
    for (const Worker& worker : workers) {
      if (!worker.alive) continue;
      RankProgress rank;
      rank.global_rank = worker.placement.global_rank;
      rank.local_rank = worker.placement.local_rank;
      rank.host = options.host;
      progress_monitor.Sample(worker.placement.local_rank, worker.output.BytesRead(), now, rank);
      ranks.push_back(std::move(rank));
    }
    if (!ranks.empty()) coordinator.ReportProgress(round, std::move(ranks));
  }

  // A straggler's news: on the console of the node that runs it (once in the job), in the
  // others' logs.
  void OnStraggler(const StragglerNews& news) {
    const int local_rank = news.rank.global_rank - round.first_global_rank;
    if (state.phase != Phase::kRunning || local_rank < 0 || local_rank >= options.nproc) {
      log->info("{}", news.description);
      return;
    }
    std::fprintf(stderr, "ddprun: %s\n", news.description.c_str());
  }

  // A hang in the job: this node's hung workers' stacks are collected, then they fail (or, with
  // --hang_action=stacks, are only reported).
  void OnHang(const HangFinding& finding) {
    if (state.phase != Phase::kRunning || state.interrupted) return;
    std::vector<HungWorker> hung_here;
    for (const RankProgress& rank : finding.hung) {
      const int local_rank = rank.global_rank - round.first_global_rank;
      if (local_rank < 0 || local_rank >= options.nproc) continue;  // another node's
      const Worker& worker = workers[static_cast<size_t>(local_rank)];
      if (!worker.alive) continue;
      hung_here.push_back({static_cast<size_t>(local_rank), worker.pid, rank,
                           options.log_layout.WorkerDir(attempt, local_rank)});
    }
    hang_response.Respond(finding.description, std::move(hung_here));
  }

  void OnHangDecided(const std::vector<HungFailure>& failed) {
    if (state.phase != Phase::kRunning) return;
    for (const HungFailure& hung : failed) {
      const Worker& worker = workers[hung.index];
      if (!worker.alive) continue;
      failures.push_back(CaptureHangFailure(Describe(worker), hung.stall, hung.stacks.stacks_file,
                                            hung.stacks.excerpt));
    }
    if (!failures.empty()) HandleFailure();
  }

  void OnRound(const NodeAssignment& next) {
    if (OnRoundReady(state).action == Action::kIgnoreRound) {
      // A node stopping for a signal has left: its round is no news.
      if (!state.interrupted) {
        log->warn("round {} is ready, but this node is not waiting for one; ignored", next.round);
      }
      return;
    }
    round = next;
    if (warm_starts) {
      // An attempt waits for the preloading interpreter's imports (the first one's, or a
      // replacement's), which its workers would otherwise each do.
      round_waits_for_preload = true;
      warm_starts->WhenSettled([this] {
        if (!round_waits_for_preload) return;
        round_waits_for_preload = false;
        if (OnRoundReady(state).action == Action::kStartAttempt) StartAttempt();
      });
      return;
    }
    StartAttempt();
  }

  void OnRestart(const std::string& reason) {
    if (state.interrupted || state.phase == Phase::kDone) return;
    log->warn("restarting the workers: {}", reason);
    Carry(OnRestartOrdered(state));
  }

  void OnJobComplete() {
    const SupervisorTransition transition = ddprun::OnJobComplete(state, AliveCount() > 0);
    if (transition.action == Action::kStopWorkersAndFail) {
      log->error("the job was declared complete while this node's workers run; stopping them");
      job_failure = "the job was declared complete while workers of " + options.host + " ran";
    }
    Carry(transition);
  }

  void OnJobFailed(const std::string& reason, int status,
                   const std::optional<WorkerFailure>& root_cause) {
    if (state.phase == Phase::kDone) return;
    // Kept even when interrupted: the run then exits with 128 + signal once stopped.
    job_failure = reason;
    job_root_cause = root_cause;
    exit_status = status;
    Carry(ddprun::OnJobFailed(state));
  }

  // Takes the transition's state and carries out its action.
  void Carry(const SupervisorTransition& transition) {
    state = transition.next;
    switch (transition.action) {
      case Action::kNothing:
      case Action::kIgnoreRound:   // OnRound's own
      case Action::kStartAttempt:  // OnRound's own: it may wait for the preloading interpreter
        return;
      case Action::kReportFailure:
        coordinator.ReportFailure(round, failures.front(), ExitStatusOf(failures.front()));
        StopWorkers();
        return;
      case Action::kReportSuccess:
        coordinator.ReportSuccess(round);
        return;
      case Action::kStopWorkers:
      case Action::kStopWorkersAndFail:
        StopWorkers();
        return;
      case Action::kForwardStopSignal:
        StopGroup(interrupt_signal);
        coordinator.Leave();
        return;
      case Action::kLeaveAndExit:
        coordinator.Leave();
        Finish(128 + interrupt_signal);
        return;
      case Action::kKillNow:
        group_stop.KillNow();
        return;
      case Action::kJoinNextRound:
        if (options.attempt_over) options.attempt_over();
        coordinator.JoinNextRound();
        return;
      case Action::kGiveUp:
        GiveUp();
        return;
      case Action::kFinishSucceeded:
        Finish(0);
        return;
      case Action::kExitInterrupted:
        Finish(128 + interrupt_signal);
        return;
    }
  }

  // Stops the running workers with SIGTERM, once a hang's stacks being collected are in (the
  // collection is bounded by its timeout).
  void StopWorkers() {
    if (hang_response.DeferStop()) return;
    StopGroup(SIGTERM);
  }

  void WatchChildren() {
    children.async_wait([this](const boost::system::error_code& error, int) {
      if (error) return;
      SignalsFirst();
      if (state.phase == Phase::kDone) return;
      ReapChildren();
      if (state.phase != Phase::kDone) WatchChildren();
    });
  }

  void WatchStopSignals() {
    stop_signals->AsyncWait([this](int signal_number) {
      OnStopSignal(signal_number);
      if (state.phase != Phase::kDone) WatchStopSignals();
    });
  }

  // Carries out, in order, the stop signals received and not yet handled: called before news
  // from elsewhere is acted on (stop_signal_watch.h).
  void SignalsFirst() {
    while (state.phase != Phase::kDone) {
      const std::optional<int> signal_number = stop_signals->Take();
      if (!signal_number) return;
      OnStopSignal(*signal_number);
    }
  }

  // SIGUSR1 and SIGUSR2 (Slurm's --signal=B:USR1@120 before a preemption, a checkpoint
  // request): to every running worker's process group, at once; nothing else changes.
  void WatchForwardedSignals() {
    forwarded_signals.async_wait([this](const boost::system::error_code& error, int signal_number) {
      if (error) return;
      const std::vector<pid_t> pids = AlivePids();
      log->info("forwarding {} to {} worker(s)", SignalName(signal_number), pids.size());
      for (pid_t pid : pids) {
        if (Status s = processes.SignalGroup(pid, signal_number); !s.ok()) {
          log->error("worker pid {}: {}", pid, s.message());
        }
      }
      if (state.phase != Phase::kDone) WatchForwardedSignals();
    });
  }

  void WatchWindowChanges() {
    window_changes.async_wait([this](const boost::system::error_code& error, int) {
      if (error) return;
      const TerminalSize size = options.window_size();
      for (auto& worker : workers) {
        if (worker.alive) worker.output.Resize(size);
      }
      if (state.phase != Phase::kDone) WatchWindowChanges();
    });
  }

  // Where a worker's stdin comes from.
  InputChannel InputOf(const WorkerPlacement& placement) const {
    switch (options.input) {
      case SupervisorOptions::Input::kNobody:
        return InputChannel::kNull;
      case SupervisorOptions::Input::kEveryWorker:
        return InputChannel::kInherited;
      case SupervisorOptions::Input::kRankZero:
        if (placement.global_rank != 0) return InputChannel::kNull;
        // A file (or /dev/null) is read by the worker itself, from where the last one stopped.
        return input_forwarder ? InputChannel::kForwarded : InputChannel::kInherited;
    }
    return InputChannel::kNull;
  }

  size_t AliveCount() const {
    size_t alive = 0;
    for (const auto& worker : workers) alive += worker.alive ? 1 : 0;
    return alive;
  }

  void EndLeftovers() {
    if (!options.end_leftovers) return;
    std::vector<pid_t> spared = AlivePids();
    if (warm_starts && warm_starts->pid() > 0) spared.push_back(warm_starts->pid());
    options.end_leftovers(spared);
  }

  void StartAttempt() {
    timeline::Note("round ready", round.round);
    WorkerForker* const forker = warm_starts ? warm_starts->ForAttempt() : nullptr;
    EndLeftovers();  // what the last attempt's workers left, should it not have stopped
    state = OnAttemptStarted(state).next;
    ++attempt;
    failures.clear();  // the report covers the round that gave up; earlier ones were restarted
    workers.clear();
    workers.resize(static_cast<size_t>(options.nproc));
    progress_monitor.Reset(workers.size());
    log->info("starting {} worker(s) of round {}, ranks {}..{} of {}", options.nproc, round.round,
              round.first_global_rank, round.first_global_rank + options.nproc - 1,
              round.world_size);
    // Each worker starts as soon as it is ready, and execs while the next is made ready.
    std::unique_ptr<WorkerStartBatch> batch = processes.StartBatch();
    std::vector<SpawnOptions> spawned_as(workers.size());
    for (int local_rank = 0; local_rank < options.nproc; ++local_rank) {
      Worker& worker = workers[static_cast<size_t>(local_rank)];
      worker.placement = {local_rank,       round.first_global_rank + local_rank,
                          round.group_rank, options.nproc,
                          round.world_size, round.group_world_size};
      SpawnRequest request;
      if (Status s = PrepareWorker(worker, request); !s.ok()) {
        RecordSpawnFailure(worker, s);
        break;  // the workers started so far are adopted, then stopped
      }
      spawned_as[static_cast<size_t>(local_rank)] = request.options;
      if (forker != nullptr) request.forker = warm_starts->ForWorker(forker, request.envp);
      batch->Add(std::move(request));
    }
    std::vector<Result<SpawnedWorker>> spawned = batch->Finish();
    if (warm_starts) warm_starts->AfterAttempt();
    timeline::Note("workers started:", static_cast<long>(spawned.size()));
    for (size_t i = 0; i < spawned.size(); ++i) {
      if (spawned[i].ok()) {
        AdoptWorker(workers[i], spawned_as[i], spawned[i].value());
      } else {
        RecordSpawnFailure(workers[i], spawned[i].status());
      }
    }
    if (!failures.empty()) HandleFailure();
  }

  // Its log directory, environment and how it is started.
  Status PrepareWorker(Worker& worker, SpawnRequest& request) {
    const int local_rank = worker.placement.local_rank;
    const RunLogLayout& layout = options.log_layout;
    RETURN_IF_ERROR(layout.PrepareWorkerDir(attempt, local_rank));
    worker.error_file = layout.ErrorFile(attempt, local_rank);
    auto environment = options.environment(worker.placement, round, worker.error_file);
    const std::string worker_dir = layout.WorkerDir(attempt, local_rank);
    // The progress contract for any program (docs/environment.md), whether or not it is read.
    const std::string progress_file = layout.ProgressFile(attempt, local_rank);
    environment[worker_env::kProgressFile.name] = progress_file;
    SpawnOptions& how = request.options;
    how = options.spawn;
    if (options.hang.samples_progress()) {
      ASSIGN_OR_RETURN(const int page_fd, progress_monitor.Prepare(local_rank, progress_file));
      environment[worker_env::kProgressFd.name] = std::to_string(page_fd);
      AddPythonHook(PythonHookDir(), worker_dir, environment);
      how.inherited_fd = page_fd;
      how.debuggable_by_parent = true;
    }
    if (static_cast<size_t>(local_rank) < options.bindings.size()) {
      how.binding = options.bindings[static_cast<size_t>(local_rank)];
    }
    how.stdout_channel =
        output_router.ChannelFor(local_rank, StdStreams::kStdout, how.stdout_channel);
    how.stderr_channel =
        output_router.ChannelFor(local_rank, StdStreams::kStderr, how.stderr_channel);
    how.stdin_channel = InputOf(worker.placement);
    if (options.window_size) {
      if (const TerminalSize size = options.window_size(); size.rows > 0 && size.cols > 0) {
        how.terminal_size = size;
      }
    }
    request.argv = options.worker_argv;
    request.envp = ToEnvp(environment);
    return Status::Ok();
  }

  // A started worker: supervised, its output routed, its input forwarded.
  void AdoptWorker(Worker& worker, const SpawnOptions& how, const SpawnedWorker& spawned) {
    const int local_rank = worker.placement.local_rank;
    const RunLogLayout& layout = options.log_layout;
    worker.pid = spawned.pid;
    if (spawned.pidfd >= 0) ::close(spawned.pidfd);
    worker.alive = true;
    progress_monitor.Started(local_rank, ProgressMonitor::Clock::now());
    worker.output = output_router.Route(local_rank, worker.placement.global_rank, spawned, how,
                                        layout.StdoutLog(attempt, local_rank),
                                        layout.StderrLog(attempt, local_rank));
    if (spawned.stdin_fd >= 0) {
      input_forwarder->SetTarget(spawned.stdin_fd, how.stdout_channel == OutputChannel::kTerminal);
    }
  }

  FailedWorker Describe(const Worker& worker) const {
    return {worker.placement, worker.pid, worker.error_file, options.host};
  }

  void RecordSpawnFailure(const Worker& worker, const Status& status) {
    failures.push_back(CaptureSpawnFailure(Describe(worker), status));
    log->error("could not start rank {}: {}", worker.placement.global_rank, status.message());
  }

  // Reaps this group's workers that have exited, and only them: any other child of the process
  // (another library's, the test's) is left for its owner to wait for.
  void ReapChildren() {
    for (auto& worker : workers) {
      if (!worker.alive) continue;
      Result<std::optional<int>> reaped = processes.Reap(worker.pid);
      if (!reaped.ok()) {
        // ECHILD: someone else reaped it (waitpid(-1) elsewhere in the process). Its status is
        // lost; count it as a failure rather than wait for it forever.
        log->error("{}; counting it as failed", reaped.status().message());
        OnWorkerExit(worker, W_EXITCODE(1, 0));
      } else if (reaped->has_value()) {
        OnWorkerExit(worker, **reaped);
      }
      if (state.phase == Phase::kDone) return;
    }
  }

  void OnWorkerExit(Worker& worker, int wait_status) {
    timeline::Note("worker reaped, pid", worker.pid);
    worker.alive = false;
    worker.output.Finish();
    // A rank killed while setting up its shared memory left the names in /dev/shm.
    if (const int removed = RemoveRankSharedMemory(worker.pid); removed > 0) {
      log->info("removed {} shared-memory name(s) rank {} (pid {}) left in /dev/shm", removed,
                worker.placement.global_rank, worker.pid);
    }
    // Input typed from now on waits for the next attempt's rank 0.
    if (input_forwarder && worker.placement.global_rank == 0) input_forwarder->SetTarget(-1, false);
    const bool success = WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
    if (state.phase == Phase::kRunning) {
      if (success) {
        worker.succeeded = true;
        for (const auto& other : workers) {
          if (!other.succeeded) return;
        }
        Carry(OnAllSucceeded(state));
        return;
      }
      RecordFailure(worker, wait_status);
      HandleFailure();
      return;
    }
    // Stopping. A worker that ended by its own failure, not by our signals, is still reported.
    const bool stopped_by_us =
        WIFSIGNALED(wait_status) &&
        (WTERMSIG(wait_status) == group_stop.signal_sent() || WTERMSIG(wait_status) == SIGKILL);
    if (!success && !stopped_by_us && !state.interrupted) RecordFailure(worker, wait_status);
    if (AliveCount() == 0) OnGroupStopped();
  }

  void RecordFailure(const Worker& worker, int wait_status) {
    WorkerFailure failure = CaptureExitFailure(Describe(worker), wait_status);
    log->warn("rank {} (pid {}) failed: {}", failure.global_rank, failure.pid,
              DescribeExit(failure));
    failures.push_back(std::move(failure));
  }

  // The first failure of a running round: reported, and the workers stopped while the
  // coordinator decides.
  void HandleFailure() { Carry(OnWorkerFailed(state)); }

  void OnStopSignal(int signal_number) {
    const SupervisorTransition transition = ddprun::OnStopSignal(state, AliveCount() > 0);
    if (transition.action == Action::kKillNow) {
      log->warn("received {} again; killing the workers now", SignalName(signal_number));
    } else if (transition.action != Action::kNothing) {
      log->warn("received {}; stopping the workers", SignalName(signal_number));
      interrupt_signal = signal_number;
    }
    Carry(transition);
  }

  std::vector<pid_t> AlivePids() const {
    std::vector<pid_t> pids;
    for (const auto& worker : workers) {
      if (worker.alive) pids.push_back(worker.pid);
    }
    return pids;
  }

  // Stops the live workers (GroupStop: signal_number, then SIGKILL, then giving up on them);
  // OnGroupStopped follows in every case.
  void StopGroup(int signal_number) {
    if (AliveCount() == 0) {
      boost::asio::post(io, [this] { OnGroupStopped(); });
      return;
    }
    group_stop.Begin(
        signal_number, [this] { return AlivePids(); },
        [this](const std::vector<pid_t>&) {
          for (auto& worker : workers) {
            if (!worker.alive) continue;
            worker.alive = false;
            worker.output.Finish();
          }
          OnGroupStopped();
        });
  }

  void OnGroupStopped() {
    if (state.phase != Phase::kStopping) return;
    timeline::Note("the workers have stopped");
    group_stop.Cancel();
    EndLeftovers();
    Carry(ddprun::OnGroupStopped(state));
  }

  // The job failed: the report, once, and the job's exit status. When this node's own failure is
  // the job's root cause the report details it; otherwise it names the root cause the
  // coordinator gave, and lists this node's failures after it.
  void GiveUp() {
    // This node's own first failure is the job's root cause: recognised by the record itself
    // (host, rank, pid, time), not by its text.
    const bool own_root_cause =
        !failures.empty() && job_root_cause && SameFailure(*job_root_cause, failures.front());
    if (own_root_cause || !options.report_only_own_root_cause) {
      failure_report =
          FormatFailureReport(options.program_label, failures, round.restart_count,
                              coordinator.max_restarts(), own_root_cause ? "" : job_failure);
    }
    Finish(exit_status);
  }

  // Ends the run: cancels every watch, so io.run() returns once the output pumps have
  // forwarded what the workers wrote.
  void Finish(int status) {
    EndLeftovers();
    state.phase = Phase::kDone;
    exit_status = status;
    boost::system::error_code ignored;
    children.cancel(ignored);
    stop_signals->Cancel();
    forwarded_signals.cancel(ignored);
    window_changes.cancel(ignored);
    progress_timer.cancel();
    if (input_forwarder) input_forwarder->Stop();
    group_stop.Cancel();
    if (options.run_over) options.run_over();
  }
};

WorkerGroupSupervisor::WorkerGroupSupervisor(boost::asio::io_context& io, SupervisorOptions options)
    : impl_(std::make_unique<Impl>(io, std::move(options))) {}

WorkerGroupSupervisor::~WorkerGroupSupervisor() = default;

int WorkerGroupSupervisor::Run() {
  auto stop_signals = StopSignalWatch::Start(impl_->io);
  if (!stop_signals.ok()) {
    impl_->log->error("{}", stop_signals.status().message());
    return 1;
  }
  impl_->stop_signals = std::move(stop_signals).value();
  impl_->WatchChildren();
  impl_->WatchStopSignals();
  impl_->WatchForwardedSignals();
  impl_->WatchWindowChanges();
  impl_->Begin();
  impl_->io.run();
  if (!impl_->failure_report.empty()) {
    (void)WriteAll(STDERR_FILENO, impl_->failure_report, "the failure report to stderr");
  }
  return impl_->exit_status;
}

bool WorkerGroupSupervisor::interrupted() const { return impl_->state.interrupted; }

bool WorkerGroupSupervisor::found_hang() const { return impl_->hang_response.found(); }

}  // namespace ddprun
