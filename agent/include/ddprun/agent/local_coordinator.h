// LocalCoordinator: the RoundCoordinator of a single-node job. Every round has the one node;
// a failure restarts the group while the node's restart budget lasts (RestartPolicy), and the
// node's progress is the whole job's, in which it looks for hangs and stragglers.
#pragma once

#include <boost/asio/io_context.hpp>

#include "ddprun/agent/local_job_record.h"
#include "ddprun/agent/restart_policy.h"
#include "ddprun/agent/round_coordinator.h"

namespace ddprun {

class LocalCoordinator final : public RoundCoordinator {
 public:
  // `first_round`: the assignment of round 0 (ranks, world size, master address and port).
  // `record`: where the job's state is kept for the metrics pages (--metrics_port); null:
  // nowhere. It must outlive the coordinator.
  LocalCoordinator(boost::asio::io_context& io, NodeAssignment first_round, int max_restarts,
                   HangSettings hang = {}, LocalJobRecord* record = nullptr);

  void Start(RoundEvents events) override;
  void JoinNextRound() override;
  void ReportFailure(const NodeAssignment& round, const WorkerFailure& failure,
                     int exit_status) override;
  void ReportProgress(const NodeAssignment& round, std::vector<RankProgress> ranks) override;
  void ReportSuccess(const NodeAssignment& round) override;
  void Leave() override {}
  int max_restarts() const override { return policy_.max_restarts(); }

 private:
  boost::asio::io_context& io_;
  NodeAssignment round_;
  RestartPolicy policy_;
  const HangSettings hang_;
  HangLatch hang_latch_;            // of the current round
  StragglerWatch straggler_watch_;  // of the current round
  RoundEvents events_;
  LocalJobRecord* const record_;
};

}  // namespace ddprun
