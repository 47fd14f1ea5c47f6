// The supervisor's decisions, stepped through sequences of events as the coordinator, the
// workers and the agent's signals would deliver them. No process is started.
#include "supervisor_phases.h"

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {

using Phase = SupervisorPhase;
using Action = SupervisorAction;

// Applies `transition`, checks its action, and returns the state it leads to.
SupervisorState Expect(const SupervisorTransition& transition, Action action) {
  CHECK(transition.action == action);
  return transition.next;
}

// A round ready and its workers started.
SupervisorState Running() {
  SupervisorState state;
  state = Expect(OnRoundReady(state), Action::kStartAttempt);
  return Expect(OnAttemptStarted(state), Action::kNothing);
}

}  // namespace

TEST_CASE("a failure is reported and the group stopped, and the restart that answers it rejoins") {
  SupervisorState state = Expect(OnWorkerFailed(Running()), Action::kReportFailure);
  CHECK(state.phase == Phase::kStopping);
  CHECK(state.after_stop == AfterStop::kUndecided);
  // A second worker fails while the group stops: recorded by the supervisor, not reported.
  state = Expect(OnWorkerFailed(state), Action::kNothing);
  state = Expect(OnRestartOrdered(state), Action::kNothing);
  CHECK(state.after_stop == AfterStop::kRejoin);
  state = Expect(OnGroupStopped(state), Action::kJoinNextRound);
  CHECK(state.phase == Phase::kWaitingForRound);
  Expect(OnRoundReady(state), Action::kStartAttempt);
}

TEST_CASE("a group that stopped before the coordinator answered waits for its decision") {
  SupervisorState state = Expect(OnWorkerFailed(Running()), Action::kReportFailure);
  state = Expect(OnGroupStopped(state), Action::kNothing);
  CHECK(state.phase == Phase::kAwaitingDecision);
  SECTION("a restart: the next round") {
    state = Expect(OnRestartOrdered(state), Action::kJoinNextRound);
    CHECK(state.phase == Phase::kWaitingForRound);
  }
  SECTION("the restart budget is spent: the job fails at once") {
    state = Expect(OnJobFailed(state), Action::kGiveUp);
    CHECK(state.phase == Phase::kDone);
  }
}

TEST_CASE(
    "when the budget is gone the failure report follows the stop, and a late restart does not undo "
    "it") {
  SupervisorState state = Expect(OnWorkerFailed(Running()), Action::kReportFailure);
  state = Expect(OnJobFailed(state), Action::kNothing);
  CHECK(state.after_stop == AfterStop::kGiveUp);
  state = Expect(OnRestartOrdered(state), Action::kNothing);
  CHECK(state.after_stop == AfterStop::kGiveUp);
  state = Expect(OnGroupStopped(state), Action::kGiveUp);
  CHECK(state.phase == Phase::kDone);
  // Nothing after the end changes it.
  CHECK(OnRestartOrdered(state).next == state);
  CHECK(OnJobFailed(state).next == state);
  CHECK(OnStopSignal(state, false).action == Action::kNothing);
}

TEST_CASE("a job failure elsewhere while this node runs stops its workers, then the report") {
  SupervisorState state = Expect(OnJobFailed(Running()), Action::kStopWorkers);
  CHECK(state.after_stop == AfterStop::kGiveUp);
  Expect(OnGroupStopped(state), Action::kGiveUp);
}

TEST_CASE(
    "a stop signal during a stop for a failure: the run exits with the signal, a second kills") {
  SupervisorState state = Expect(OnWorkerFailed(Running()), Action::kReportFailure);
  state = Expect(OnStopSignal(state, true), Action::kForwardStopSignal);
  CHECK(state.interrupted);
  CHECK(state.after_stop == AfterStop::kExit);
  // The coordinator's answers no longer change the outcome.
  state = Expect(OnRestartOrdered(state), Action::kNothing);
  state = Expect(OnJobFailed(state), Action::kNothing);
  CHECK(state.after_stop == AfterStop::kExit);
  state = Expect(OnStopSignal(state, true), Action::kKillNow);
  state = Expect(OnGroupStopped(state), Action::kExitInterrupted);
  CHECK(state.phase == Phase::kDone);
}

TEST_CASE("a stop signal with no worker running leaves the job and exits at once") {
  SupervisorState waiting;
  SupervisorState state = Expect(OnStopSignal(waiting, false), Action::kLeaveAndExit);
  CHECK(state.phase == Phase::kDone);
  CHECK(state.interrupted);
}

TEST_CASE("an interrupted node starts no round and ignores the coordinator's restarts") {
  SupervisorState state = Expect(OnStopSignal(Running(), true), Action::kForwardStopSignal);
  Expect(OnRoundReady(state), Action::kIgnoreRound);
  Expect(OnRestartOrdered(state), Action::kNothing);
  Expect(OnJobComplete(state, false), Action::kNothing);
}

TEST_CASE("a round is taken only while waiting for one") {
  Expect(OnRoundReady(Running()), Action::kIgnoreRound);
  SupervisorState succeeded = Expect(OnAllSucceeded(Running()), Action::kReportSuccess);
  Expect(OnRoundReady(succeeded), Action::kIgnoreRound);
}

TEST_CASE(
    "a node whose workers succeeded ends with the job, or rejoins when another node restarts it") {
  SupervisorState state = Expect(OnAllSucceeded(Running()), Action::kReportSuccess);
  CHECK(state.phase == Phase::kSucceeded);
  SECTION("complete") {
    CHECK(Expect(OnJobComplete(state, false), Action::kFinishSucceeded).phase == Phase::kDone);
  }
  SECTION("restarted") {
    CHECK(Expect(OnRestartOrdered(state), Action::kJoinNextRound).phase == Phase::kWaitingForRound);
  }
}

TEST_CASE("a restart while running stops the workers and rejoins once they stopped") {
  SupervisorState state = Expect(OnRestartOrdered(Running()), Action::kStopWorkers);
  CHECK(state.after_stop == AfterStop::kRejoin);
  // A worker killed by that stop is no failure to report.
  state = Expect(OnWorkerFailed(state), Action::kNothing);
  Expect(OnGroupStopped(state), Action::kJoinNextRound);
}

TEST_CASE(
    "the job declared complete while this node's workers run: they are stopped, the run fails") {
  SupervisorState state = Expect(OnJobComplete(Running(), true), Action::kStopWorkersAndFail);
  CHECK(state.after_stop == AfterStop::kGiveUp);
  Expect(OnGroupStopped(state), Action::kGiveUp);
}

TEST_CASE("a group stop that reports in while not stopping changes nothing") {
  for (SupervisorState state : {SupervisorState{}, Running()}) {
    CHECK(OnGroupStopped(state).next == state);
    CHECK(OnGroupStopped(state).action == Action::kNothing);
  }
}
