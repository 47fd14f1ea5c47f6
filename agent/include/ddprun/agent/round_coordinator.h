// RoundCoordinator: who decides when this node's workers run and what a failure leads to. The
// supervisor runs workers and reports what they did; the coordinator answers with events.
//
// - LocalCoordinator (one node): decides at once from the node's own restart budget.
// - RendezvousCoordinator (multi-node): forwards reports to the rendezvous server and its
//   decisions back, so that every node restarts, completes or fails together.
//
// Events are delivered on the supervisor's io_context, never from inside a call to the
// coordinator, so the supervisor's state is never re-entered.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/hang_finder.h"
#include "ddprun/base/straggler_watch.h"
#include "ddprun/base/worker_failure.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

struct RoundEvents {
  // Start this node's workers for the round.
  std::function<void(const NodeAssignment& round)> on_round;
  // Stop the workers, then call JoinNextRound.
  std::function<void(const std::string& reason)> on_restart;
  // Every worker of every node succeeded: the job is done.
  std::function<void()> on_job_complete;
  // The job is over without success: `reason` is its root cause (the same on every node),
  // `exit_status` what ddprun exits with, and `root_cause` the worker failure behind it when
  // one is (not when nodes were lost or the server could not be reached).
  std::function<void(const std::string& reason, int exit_status,
                     const std::optional<WorkerFailure>& root_cause)>
      on_job_failed;
  // A hang was found (hang_finder.h): the node collects the stacks of its hung ranks, then
  // stops and reports them as failed, or only reports (--hang_action=stacks).
  std::function<void(const HangFinding& finding)> on_hang;
  // A rank became a straggler or recovered (--straggler_ratio, straggler_watch.h): the node
  // running it says so on its console, the others in their logs.
  std::function<void(const StragglerNews& news)> on_straggler;
};

class RoundCoordinator {
 public:
  virtual ~RoundCoordinator() = default;
  // Begins; the first on_round follows when the round is formed.
  virtual void Start(RoundEvents events) = 0;
  // After on_restart, once the workers have stopped.
  virtual void JoinNextRound() = 0;
  // A worker failed in `round`: `failure` is the node's first of the round, the job's root cause
  // if it is the first anywhere. The answer is on_restart or on_job_failed (always the latter for
  // a hang under --hang_action=fail).
  virtual void ReportFailure(const NodeAssignment& round, const WorkerFailure& failure,
                             int exit_status) = 0;
  // This node's running ranks' progress, sampled while hang or straggler detection is on. The
  // coordinator looks for a hang and stragglers in the whole job's: the node's own
  // (LocalCoordinator), or every node's, at the server (RendezvousCoordinator). A hang found is
  // on_hang, once per stall; a straggler's news on_straggler.
  virtual void ReportProgress(const NodeAssignment& round, std::vector<RankProgress> ranks) = 0;
  // Every worker of this node exited 0 in `round`.
  virtual void ReportSuccess(const NodeAssignment& round) = 0;
  // The node is leaving (the agent got a stop signal). No event follows.
  virtual void Leave() = 0;
  virtual int max_restarts() const = 0;
};

}  // namespace ddprun
