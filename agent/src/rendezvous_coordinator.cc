// RendezvousCoordinator; see rendezvous_coordinator.h.
#include "ddprun/agent/rendezvous_coordinator.h"

#include <boost/asio/post.hpp>

namespace ddprun {

RendezvousCoordinator::RendezvousCoordinator(boost::asio::io_context& io,
                                             SessionClientOptions options)
    : io_(io), options_(std::move(options)) {}

RendezvousCoordinator::~RendezvousCoordinator() {
  if (client_) client_->Close();
}

void RendezvousCoordinator::Start(RoundEvents events) {
  events_ = std::move(events);
  client_ = std::make_unique<SessionClient>(
      options_, [this](const NodeEvent& event) { OnEvent(event); },
      [this](const Status& error) {
        boost::asio::post(io_, [this, message = error.message()] {
          events_.on_job_failed(message, 1, std::nullopt);
        });
      });
  client_->Start();
}

// On the client's thread: hand the event to the supervisor's loop.
void RendezvousCoordinator::OnEvent(const NodeEvent& event) {
  switch (event.type) {
    case NodeEvent::Type::kRoundReady: {
      const NodeAssignment& round = event.assignment;
      // Recorded at once, so that a reconnect from now on re-registers this round.
      client_->SetRunning(RunningRound{round.round, round.group_rank, round.group_world_size,
                                       round.restart_count, round.store_credential});
      boost::asio::post(io_, [this, round] { events_.on_round(round); });
      return;
    }
    case NodeEvent::Type::kRestart:
      boost::asio::post(io_, [this, reason = event.reason] { events_.on_restart(reason); });
      return;
    case NodeEvent::Type::kJobComplete:
      boost::asio::post(io_, [this] { events_.on_job_complete(); });
      return;
    case NodeEvent::Type::kHang:
      boost::asio::post(io_, [this, finding = event.hang] { events_.on_hang(finding); });
      return;
    case NodeEvent::Type::kStraggler:
      boost::asio::post(io_, [this, news = event.straggler] { events_.on_straggler(news); });
      return;
    case NodeEvent::Type::kJobFailed:
      boost::asio::post(io_, [this, event] {
        events_.on_job_failed(event.reason, event.exit_status, event.failure);
      });
      return;
  }
}

void RendezvousCoordinator::JoinNextRound() { client_->JoinNextRound(); }

void RendezvousCoordinator::ReportFailure(const NodeAssignment& round, const WorkerFailure& failure,
                                          int exit_status) {
  client_->ReportFailure(round.round, failure, exit_status);
}

void RendezvousCoordinator::ReportProgress(const NodeAssignment& round,
                                           std::vector<RankProgress> ranks) {
  client_->ReportProgress(round.round, ranks);
}

void RendezvousCoordinator::ReportSuccess(const NodeAssignment& round) {
  client_->ReportSuccess(round.round);
}

void RendezvousCoordinator::Leave() { client_->Leave(); }

}  // namespace ddprun
