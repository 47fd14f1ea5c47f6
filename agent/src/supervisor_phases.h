// The worker group supervisor's decisions, as a pure function of where it stands and what
// happened: no processes, no loop, no clock. WorkerGroupSupervisor (worker_group_supervisor.cc)
// keeps a SupervisorState, hands each event to the function of its kind, takes the state it
// returns and carries out the action; the unit tests step these functions through sequences of
// events (a worker failing while a stop is under way, a signal during a stop, a restart
// refused) without starting anything.
#pragma once

namespace ddprun {

enum class SupervisorPhase {
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
  kGiveUp,     // print the failure report and exit with the job's status
  kExit,       // a stop signal: exit with 128 + signal
};

struct SupervisorState {
  SupervisorPhase phase = SupervisorPhase::kWaitingForRound;
  AfterStop after_stop = AfterStop::kUndecided;
  bool interrupted = false;  // a stop signal came; the run ends with 128 + signal

  bool operator==(const SupervisorState&) const = default;
};

// What the supervisor does on the transition, besides taking the new state.
enum class SupervisorAction {
  kNothing,
  kIgnoreRound,         // a round while not waiting for one: logged, nothing else
  kStartAttempt,        // start the round's workers
  kReportFailure,       // tell the coordinator of the round's first failure, then kStopWorkers
  kReportSuccess,       // tell the coordinator every worker of this node exited 0
  kStopWorkers,         // SIGTERM to the group, bounded (after a hang's stacks, if collecting)
  kForwardStopSignal,   // the agent's stop signal to the group, bounded; then leave the job
  kLeaveAndExit,        // no worker runs: leave the job and exit with 128 + signal
  kKillNow,             // a second stop signal: SIGKILL to every worker at once
  kJoinNextRound,       // ask the coordinator for the next round
  kGiveUp,              // print the failure report, exit with the job's status
  kFinishSucceeded,     // the job is complete: exit 0
  kExitInterrupted,     // exit with 128 + the stop signal
  kStopWorkersAndFail,  // the job was declared complete while workers run: stop them, give up
};

struct SupervisorTransition {
  SupervisorState next;
  SupervisorAction action = SupervisorAction::kNothing;
};

// The coordinator's round is ready: kStartAttempt, or kIgnoreRound. The state is unchanged: the
// attempt may first wait for the preloading interpreter's imports (python_preload.h).
SupervisorTransition OnRoundReady(SupervisorState state);
// The round's workers are being started.
SupervisorTransition OnAttemptStarted(SupervisorState state);
// The coordinator orders a restart (a failure elsewhere, a node lost or added).
SupervisorTransition OnRestartOrdered(SupervisorState state);
// The coordinator says every node is done.
SupervisorTransition OnJobComplete(SupervisorState state, bool workers_alive);
// The coordinator says the job failed (the restart budget is spent, or a node's failure).
SupervisorTransition OnJobFailed(SupervisorState state);
// A worker of this node failed (its exit, its start, or a hang the job fails it for). Only a
// running round's failure is reported; one while stopping is recorded by the caller.
SupervisorTransition OnWorkerFailed(SupervisorState state);
// The last worker of a running round exited 0.
SupervisorTransition OnAllSucceeded(SupervisorState state);
// SIGINT, SIGTERM, SIGHUP or SIGQUIT to the agent.
SupervisorTransition OnStopSignal(SupervisorState state, bool workers_alive);
// Every worker of the group has ended (or was given up on).
SupervisorTransition OnGroupStopped(SupervisorState state);

}  // namespace ddprun
