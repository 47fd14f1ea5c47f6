// LocalCoordinator; see local_coordinator.h.
#include "ddprun/agent/local_coordinator.h"

#include <boost/asio/post.hpp>
#include <set>

namespace ddprun {

LocalCoordinator::LocalCoordinator(boost::asio::io_context& io, NodeAssignment first_round,
                                   int max_restarts, HangSettings hang, LocalJobRecord* record)
    : io_(io),
      round_(std::move(first_round)),
      policy_(max_restarts),
      hang_(hang),
      record_(record) {}

void LocalCoordinator::Start(RoundEvents events) {
  events_ = std::move(events);
  if (record_) record_->RoundStarted(round_);
  boost::asio::post(io_, [this] { events_.on_round(round_); });
}

void LocalCoordinator::JoinNextRound() {
  ++round_.round;
  hang_latch_.Reset();
  straggler_watch_.Reset();
  round_.restart_count = policy_.restarts_used();
  if (record_) record_->RoundStarted(round_);
  boost::asio::post(io_, [this] { events_.on_round(round_); });
}

void LocalCoordinator::ReportFailure(const NodeAssignment&, const WorkerFailure& failure,
                                     int exit_status) {
  const std::string description = DescribeFailure(failure);
  const bool final_hang = !failure.hang.empty() && hang_.action == HangSettings::Action::kFail;
  const bool restarting =
      !final_hang && policy_.OnGroupFailure() == RestartPolicy::Decision::kRestart;
  if (record_) record_->WorkerFailed(failure, restarting);
  if (restarting) {
    std::string reason = "worker failure: " + description + " (restart " +
                         std::to_string(policy_.restarts_used()) + " of " +
                         std::to_string(policy_.max_restarts()) + ")";
    boost::asio::post(io_, [this, reason] { events_.on_restart(reason); });
    return;
  }
  if (record_) record_->Failed(description);
  boost::asio::post(io_, [this, description, exit_status, failure] {
    events_.on_job_failed(description, exit_status, failure);
  });
}

void LocalCoordinator::ReportProgress(const NodeAssignment&, std::vector<RankProgress> ranks) {
  if (hang_.watches_stragglers()) {
    for (StragglerNews& news : straggler_watch_.Update(ranks, hang_.straggler_ratio)) {
      if (record_ && !news.recovered) record_->StragglerNamed();
      boost::asio::post(io_, [this, news = std::move(news)] { events_.on_straggler(news); });
    }
  }
  std::optional<HangFinding> finding;
  if (hang_.enabled()) finding = FindHang(ranks, hang_);
  if (record_) {
    std::set<int> hung;
    if (finding) {
      for (const RankProgress& rank : finding->hung) hung.insert(rank.global_rank);
    }
    std::vector<RankProgress> flagged = ranks;
    for (RankProgress& rank : flagged) {
      rank.straggler = straggler_watch_.IsStraggler(rank.global_rank);
      rank.hung = hung.contains(rank.global_rank);
    }
    record_->ProgressSampled(std::move(flagged));
  }
  if (!finding || !hang_latch_.Admit(*finding)) return;
  if (record_) record_->HangFound(*finding);
  boost::asio::post(io_, [this, finding = std::move(*finding)] { events_.on_hang(finding); });
}

void LocalCoordinator::ReportSuccess(const NodeAssignment&) {
  if (record_) record_->Succeeded();
  boost::asio::post(io_, [this] { events_.on_job_complete(); });
}

}  // namespace ddprun
