// The supervisor's transitions; see supervisor_phases.h.
#include "supervisor_phases.h"

namespace ddprun {
namespace {

using Phase = SupervisorPhase;
using Action = SupervisorAction;

SupervisorTransition Stay(SupervisorState state) { return {state, Action::kNothing}; }

SupervisorTransition StopThen(SupervisorState state, AfterStop then, Action action) {
  state.phase = Phase::kStopping;
  state.after_stop = then;
  return {state, action};
}

}  // namespace

SupervisorTransition OnRoundReady(SupervisorState state) {
  if (state.phase != Phase::kWaitingForRound || state.interrupted) {
    return {state, Action::kIgnoreRound};
  }
  return {state, Action::kStartAttempt};
}

SupervisorTransition OnAttemptStarted(SupervisorState state) {
  state.phase = Phase::kRunning;
  return Stay(state);
}

SupervisorTransition OnRestartOrdered(SupervisorState state) {
  if (state.interrupted) return Stay(state);
  switch (state.phase) {
    case Phase::kRunning:
      return StopThen(state, AfterStop::kRejoin, Action::kStopWorkers);
    case Phase::kStopping:
      // A stop under way for this node's own failure: the restart answers it. A decision
      // already taken (give up) stands.
      if (state.after_stop == AfterStop::kUndecided) state.after_stop = AfterStop::kRejoin;
      return Stay(state);
    case Phase::kAwaitingDecision:
    case Phase::kSucceeded:
    case Phase::kWaitingForRound:
      state.phase = Phase::kWaitingForRound;
      return {state, Action::kJoinNextRound};
    case Phase::kDone:
      break;
  }
  return Stay(state);
}

SupervisorTransition OnJobComplete(SupervisorState state, bool workers_alive) {
  if (state.phase == Phase::kDone || state.interrupted) return Stay(state);
  if (workers_alive) return StopThen(state, AfterStop::kGiveUp, Action::kStopWorkersAndFail);
  state.phase = Phase::kDone;
  return {state, Action::kFinishSucceeded};
}

SupervisorTransition OnJobFailed(SupervisorState state) {
  if (state.phase == Phase::kDone || state.interrupted) return Stay(state);
  switch (state.phase) {
    case Phase::kRunning:
      return StopThen(state, AfterStop::kGiveUp, Action::kStopWorkers);
    case Phase::kStopping:
      state.after_stop = AfterStop::kGiveUp;
      return Stay(state);
    default:
      state.phase = Phase::kDone;
      return {state, Action::kGiveUp};
  }
}

SupervisorTransition OnWorkerFailed(SupervisorState state) {
  if (state.phase != Phase::kRunning) return Stay(state);
  return StopThen(state, AfterStop::kUndecided, Action::kReportFailure);
}

SupervisorTransition OnAllSucceeded(SupervisorState state) {
  if (state.phase != Phase::kRunning) return Stay(state);
  state.phase = Phase::kSucceeded;
  return {state, Action::kReportSuccess};
}

SupervisorTransition OnStopSignal(SupervisorState state, bool workers_alive) {
  if (state.phase == Phase::kDone) return Stay(state);
  if (state.interrupted) return {state, Action::kKillNow};
  state.interrupted = true;
  if (workers_alive) return StopThen(state, AfterStop::kExit, Action::kForwardStopSignal);
  state.phase = Phase::kDone;
  return {state, Action::kLeaveAndExit};
}

SupervisorTransition OnGroupStopped(SupervisorState state) {
  if (state.phase != Phase::kStopping) return Stay(state);
  switch (state.after_stop) {
    case AfterStop::kRejoin:
      state.phase = Phase::kWaitingForRound;
      return {state, Action::kJoinNextRound};
    case AfterStop::kUndecided:
      state.phase = Phase::kAwaitingDecision;
      return Stay(state);
    case AfterStop::kGiveUp:
      state.phase = Phase::kDone;
      return {state, Action::kGiveUp};
    case AfterStop::kExit:
      state.phase = Phase::kDone;
      return {state, Action::kExitInterrupted};
  }
  return Stay(state);
}

}  // namespace ddprun
