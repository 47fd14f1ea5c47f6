// RendezvousCoordinator: the RoundCoordinator of a multi-node job. Every decision comes from the
// rendezvous server over the node's SessionClient: rounds, restarts (a failure on any node, a
// node lost, joining or leaving), completion and failure of the whole job.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "ddprun/agent/round_coordinator.h"
#include "ddprun/rendezvous/session_client.h"

namespace ddprun {

class RendezvousCoordinator final : public RoundCoordinator {
 public:
  RendezvousCoordinator(boost::asio::io_context& io, SessionClientOptions options);
  ~RendezvousCoordinator() override;  // closes the session

  void Start(RoundEvents events) override;
  void JoinNextRound() override;
  void ReportFailure(const NodeAssignment& round, const WorkerFailure& failure,
                     int exit_status) override;
  void ReportProgress(const NodeAssignment& round, std::vector<RankProgress> ranks) override;
  void ReportSuccess(const NodeAssignment& round) override;
  void Leave() override;
  int max_restarts() const override { return options_.settings.max_restarts; }

 private:
  void OnEvent(const NodeEvent& event);

  boost::asio::io_context& io_;
  const SessionClientOptions options_;
  RoundEvents events_;
  std::unique_ptr<SessionClient> client_;
};

}  // namespace ddprun
