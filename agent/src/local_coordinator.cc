// LocalCoordinator; see local_coordinator.h.
#include "ddprun/agent/local_coordinator.h"

#include <boost/asio/post.hpp>

namespace ddprun {

LocalCoordinator::LocalCoordinator(boost::asio::io_context& io, NodeAssignment first_round,
                                   int max_restarts, HangSettings hang)
    : io_(io), round_(std::move(first_round)), policy_(max_restarts), hang_(hang) {}

void LocalCoordinator::Start(RoundEvents events) {
  events_ = std::move(events);
  boost::asio::post(io_, [this] { events_.on_round(round_); });
}

void LocalCoordinator::JoinNextRound() {
  ++round_.round;
  hang_latch_.Reset();
  straggler_watch_.Reset();
  round_.restart_count = policy_.restarts_used();
  boost::asio::post(io_, [this] { events_.on_round(round_); });
}

void LocalCoordinator::ReportFailure(const NodeAssignment&, const WorkerFailure& failure,
                                     int exit_status) {
  const std::string description = DescribeFailure(failure);
  const bool final_hang = !failure.hang.empty() && hang_.action == HangSettings::Action::kFail;
  if (!final_hang && policy_.OnGroupFailure() == RestartPolicy::Decision::kRestart) {
    std::string reason = "worker failure: " + description + " (restart " +
                         std::to_string(policy_.restarts_used()) + " of " +
                         std::to_string(policy_.max_restarts()) + ")";
    boost::asio::post(io_, [this, reason] { events_.on_restart(reason); });
    return;
  }
  boost::asio::post(io_, [this, description, exit_status, failure] {
    events_.on_job_failed(description, exit_status, failure);
  });
}

void LocalCoordinator::ReportProgress(const NodeAssignment&, std::vector<RankProgress> ranks) {
  if (hang_.watches_stragglers()) {
    for (StragglerNews& news : straggler_watch_.Update(ranks, hang_.straggler_ratio)) {
      boost::asio::post(io_, [this, news = std::move(news)] { events_.on_straggler(news); });
    }
  }
  if (!hang_.enabled()) return;
  auto finding = FindHang(ranks, hang_);
  if (!finding || !hang_latch_.Admit(*finding)) return;
  boost::asio::post(io_, [this, finding = std::move(*finding)] { events_.on_hang(finding); });
}

void LocalCoordinator::ReportSuccess(const NodeAssignment&) {
  boost::asio::post(io_, [this] { events_.on_job_complete(); });
}

}  // namespace ddprun
