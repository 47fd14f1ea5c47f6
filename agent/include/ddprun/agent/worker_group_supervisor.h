// WorkerGroupSupervisor: the per-node agent's core. Starts the node's workers, forwards their
// output, and reacts to events on one Boost.Asio loop: a child's exit (SIGCHLD), a signal to
// the agent, a pipe becoming readable, a timer. There is no polling anywhere.
//
// What happens between rounds is the RoundCoordinator's to decide (the node alone, or the
// rendezvous server for a multi-node job):
// - A round is ready: the node's workers start with that round's ranks.
// - A worker fails: the failure is reported and the whole group stopped (SIGTERM to every
//   worker's process group, shutdown_timeout, SIGKILL). Restart: the next round follows. Job
//   failed: the failure report is printed and Run returns the root cause's exit status.
// - Every worker exits 0: reported; Run returns 0 once the job is complete (every node done).
// - A restart ordered by the coordinator (a failure elsewhere, a node lost or added): the
//   workers are stopped the same way and the node joins the next round.
// - SIGINT, SIGTERM, SIGHUP or SIGQUIT to the agent: forwarded to every worker, the node leaves
//   the job, then the same bounded stop; Run returns 128 + signal. A second signal sends SIGKILL
//   at once.
// - A hang (hang detection on: hang_finder.h; the coordinator finds it in the progress the
//   supervisor samples, ProgressMonitor): the stacks of this node's hung workers are collected
//   first (HangResponse, with StackCollector) and printed; then, unless --hang_action=stacks, the
//   hung workers are failures like any other (the same bounded stop, a restart within
//   max_restarts).
// - SIGUSR1 or SIGUSR2 to the agent: forwarded to every running worker (a checkpoint request
//   before a preemption); the job runs on.
// - Every wait is bounded: a worker still alive kill_timeout after SIGKILL (stuck in the
//   kernel) is abandoned with an error in the log, never waited for forever.
//
// Its decisions (what each event does in each phase) are pure functions of their own
// (src/supervisor_phases.h), unit-tested apart from any process; the supervisor carries them
// out. Its other parts are their own classes too: OutputRouter
// (worker_output_routing.h) sends each stream where the flags say, GroupStop (group_stop.h)
// stops the group within bounds, and failure_capture.h records a failure as it is seen. It
// starts, reaps and signals its workers through WorkerProcesses (worker_processes.h: the system
// calls, or a test's fake), and reaps only its own (waitpid on each worker's pid, never
// waitpid(-1)).
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ddprun/agent/failure_report.h"
#include "ddprun/agent/python_preload.h"
#include "ddprun/agent/round_coordinator.h"
#include "ddprun/agent/run_log_layout.h"
#include "ddprun/agent/worker_environment.h"
#include "ddprun/agent/worker_output_routing.h"
#include "ddprun/agent/worker_processes.h"
#include "ddprun/base/process_spawn.h"

namespace ddprun {

struct SupervisorOptions {
  int nproc = 1;                            // workers on this node
  RoundCoordinator* coordinator = nullptr;  // required; outlives the supervisor
  std::vector<std::string> worker_argv;     // resolved program path first
  std::string program_label;                // names the program in the failure report
  // A job submitted to many hosts: the submitter shows one report, so a node prints one only
  // when its own failure is the job's root cause.
  bool report_only_own_root_cause = false;
  OutputRoutingOptions output;
  RunLogLayout log_layout{""};  // required: RunLogLayout::Claim
  std::chrono::milliseconds shutdown_timeout{30'000};
  std::chrono::milliseconds kill_timeout{5'000};
  HangSettings hang;  // off unless hang.timeout > 0
  // How long collecting one hung worker's stacks may take.
  std::chrono::milliseconds stacks_timeout{20'000};
  std::string host;
  // How each worker is started: its output channels (pipes or terminals, of which size), the
  // job's cgroup. Its stdin_channel is decided per worker from `input`.
  SpawnOptions spawn;
  // --numa_binding: each local rank's CPUs and memory node, by local rank; empty: none.
  std::vector<WorkerBinding> bindings;
  enum class Input {
    kNobody,      // every worker reads /dev/null
    kRankZero,    // this process's stdin goes to the worker of global rank 0 (srun's default)
    kEveryWorker  // every worker reads this process's stdin itself (as under torchrun)
  };
  Input input = Input::kNobody;
  // The size the workers' terminals follow, read when this process gets SIGWINCH (a terminal's,
  // or what a daemon wrote for its submitter's); a zero size is none. Null: they keep theirs.
  std::function<TerminalSize()> window_size;
  // Ends whatever the workers left running (LeftoverSweep) but `running_workers`: called before
  // each attempt, once an attempt's workers have stopped, and at the end. None: nothing is done.
  std::function<void(const std::vector<pid_t>& running_workers)> end_leftovers;
  // Called once an attempt's workers are gone, as this node asks for the next round: what served
  // that attempt starts afresh (PyTorch's store), before any node's next round can form, so that
  // no worker of it, on any node, finds the last one's state. None: nothing.
  std::function<void()> attempt_over;
  // Called as the run ends, before the event loop's last handlers: whatever else waits on
  // the loop (an on-demand store's watch) must stop, as Run returns only once nothing does.
  std::function<void()> run_over;
  // Warm Python workers (python_preload.h): when set, the node's preloading interpreter starts
  // with the supervisor, the first attempt waits for its imports, and every worker whose
  // environment fits is forked by it. Its interpreter, program and modules; the supervisor
  // gives it the workers' environment, cgroup and working directory.
  std::optional<PythonPreloadSpec> python_preload;
  // The environment of one worker in one round.
  std::function<EnvironmentMap(const WorkerPlacement& placement, const NodeAssignment& round,
                               const std::string& error_file)>
      environment;
  // How workers are started, reaped and signalled (worker_processes.h); it outlives the
  // supervisor. Null: the system's.
  WorkerProcesses* processes = nullptr;
};

class WorkerGroupSupervisor {
 public:
  WorkerGroupSupervisor(boost::asio::io_context& io, SupervisorOptions options);
  ~WorkerGroupSupervisor();
  WorkerGroupSupervisor(const WorkerGroupSupervisor&) = delete;
  WorkerGroupSupervisor& operator=(const WorkerGroupSupervisor&) = delete;

  // Runs the group to the end and returns ddprun's exit status: 0 when every worker exited 0.
  // Runs the io_context on the calling thread, which must live as long as the workers: their
  // parent-death signal follows the thread that started them.
  int Run();
  // After Run: whether a stop signal ended it.
  bool interrupted() const;
  // After Run: whether a hang was found (its stacks are in the run's log directory).
  bool found_hang() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun
