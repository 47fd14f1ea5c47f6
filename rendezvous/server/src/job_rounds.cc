// JobRounds; see job_rounds.h.
#include "job_rounds.h"

#include <algorithm>
#include <cstdio>

#include "ddprun/base/status_macros.h"
#include "ddprun/rendezvous/job_counting.h"

namespace ddprun {
namespace {

// After a server change, how long the nodes coming back have after the first one (at most
// heartbeat_timeout): they hear of the change together, and each tries the servers in turn.
constexpr std::chrono::milliseconds kReadoptGrace{1000};

std::string Seconds(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

}  // namespace

JobRounds::JobRounds(RendezvousSettings settings, RendezvousTime now)
    : settings_(settings), join_deadline_(now + settings.join_timeout), forming_since_(now) {}

JobRounds::Record JobRounds::ToRecord() const {
  Record record;
  record.state = state_;
  record.round = round_;
  record.restarts_used = restarts_used_;
  if (state_ == State::kRunning) record.members = members_.by_rank();
  if (state_ == State::kFailed) record.end_reason = last_failure_;
  return record;
}

void JobRounds::TakeOver(const Record& record) {
  taken_over_ = true;
  restarts_used_ = std::max(restarts_used_, record.restarts_used);
  switch (record.state) {
    case State::kComplete:
    case State::kFailed:
      state_ = record.state;
      last_failure_ = record.end_reason;
      return;
    case State::kRunning:
      recorded_round_ = record.round;
      recorded_members_ = record.members;
      round_ = record.round + 1;  // unless its members come back and it is adopted
      return;
    case State::kForming:
      round_ = record.round;  // never handed out: no node runs it
      return;
  }
}

bool JobRounds::MatchesRecord(const NodeDescription& node, const RunningRound& running) const {
  if (!taken_over_) return true;
  if (!recorded_round_ || running.round != *recorded_round_) return false;
  if (recorded_members_.empty()) return true;  // too many to record (job_record_codec.h)
  const auto rank = static_cast<size_t>(running.group_rank);
  return running.group_world_size == static_cast<int>(recorded_members_.size()) &&
         rank < recorded_members_.size() &&
         (recorded_members_[rank].empty() || recorded_members_[rank] == node.node_id);
}

Status JobRounds::ValidateNode(const NodeDescription& node) const {
  if (state_ == State::kComplete || state_ == State::kFailed) {
    return FailedPreconditionError("the job has already ended (" +
                                   std::string(state_ == State::kComplete ? "complete" : "failed") +
                                   "); start it with a new --rdzv_id");
  }
  if (node.node_id.empty() || node.host.empty() || node.nproc < 1) {
    return InvalidArgumentError("a node must have an id, a host and at least one worker");
  }
  if (node.requested_group_rank >= settings_.max_nodes) {
    return InvalidArgumentError(
        "node " + node.host + " asks for node rank " + std::to_string(node.requested_group_rank) +
        " of a job of at most " + std::to_string(settings_.max_nodes) + " nodes");
  }
  auto requesting = requesting_rank_.find(node.requested_group_rank);
  if (node.requested_group_rank < 0 || requesting == requesting_rank_.end()) return Status::Ok();
  for (const std::string& id : requesting->second) {
    const Node& other = nodes_.at(id);
    if (id != node.node_id && !other.disconnected_at) {
      return InvalidArgumentError("node " + node.host + " asks for node rank " +
                                  std::to_string(node.requested_group_rank) + ", which node " +
                                  other.description.host + " has already asked for");
    }
  }
  return Status::Ok();
}

JobRounds::Node& JobRounds::Describe(const NodeDescription& node) {
  Node& entry = nodes_[node.node_id];
  const int was = entry.description.requested_group_rank;  // -1 for a new entry
  if (was != node.requested_group_rank) {
    if (auto it = requesting_rank_.find(was); it != requesting_rank_.end()) {
      it->second.erase(node.node_id);
      if (it->second.empty()) requesting_rank_.erase(it);
    }
    if (node.requested_group_rank >= 0) {
      requesting_rank_[node.requested_group_rank].insert(node.node_id);
    }
  }
  entry.description = node;
  return entry;
}

void JobRounds::Heard(Node& node, RendezvousTime now) {
  node.last_heartbeat = now;
  node.disconnected_at.reset();
  lost_at_.Set(node.description.node_id, LostAt(node));
}

void JobRounds::SetJoined(Node& node, bool joined) {
  if (node.joined == joined) return;
  node.joined = joined;
  if (joined) {
    ++joined_count_;
    if (node.expected) --expected_waiting_;
  } else {
    --joined_count_;
    if (node.expected) ++expected_waiting_;
  }
}

void JobRounds::Expect(Node& node) {
  if (node.expected) return;
  node.expected = true;
  ++expected_count_;
  if (!node.joined) ++expected_waiting_;
}

void JobRounds::ClearExpected() {
  if (expected_count_ == 0) return;
  for (auto& [id, node] : nodes_) node.expected = false;
  expected_count_ = 0;
  expected_waiting_ = 0;
}

void JobRounds::EraseNode(const std::string& node_id) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  Node& node = it->second;
  SetJoined(node, false);
  if (node.expected) {
    --expected_count_;
    --expected_waiting_;  // not joined, just above
  }
  if (auto rank = requesting_rank_.find(node.description.requested_group_rank);
      rank != requesting_rank_.end()) {
    rank->second.erase(node_id);
    if (rank->second.empty()) requesting_rank_.erase(rank);
  }
  lost_at_.Erase(node_id);
  nodes_.erase(it);
}

Status JobRounds::Join(const NodeDescription& node, RendezvousTime now) {
  RETURN_IF_ERROR(ValidateNode(node));
  Node& entry = Describe(node);
  Heard(entry, now);
  if (!entry.joined) {
    entry.joined_at = now;
    SetJoined(entry, true);
  }
  if (state_ == State::kRunning) {
    if (members_.Contains(node.node_id)) {
      StartNextRound("node " + node.host + " joined again", now);
    } else if (static_cast<int>(members_.size()) < settings_.max_nodes) {
      StartNextRound("scale-up: node " + node.host + " joined", now);
    }
    return Status::Ok();  // else it waits for a round with room
  }
  MaybeCompleteRound(now);
  return Status::Ok();
}

Status JobRounds::Resume(const NodeDescription& node, const RunningRound& running,
                         RendezvousTime now) {
  RETURN_IF_ERROR(ValidateNode(node));
  const bool still_running = state_ == State::kRunning && running.round == round_ &&
                             running.group_rank >= 0 &&
                             running.group_rank < static_cast<int>(members_.size());
  if (still_running &&
      members_.by_rank()[static_cast<size_t>(running.group_rank)] == node.node_id) {
    Heard(Describe(node), now);
    return Status::Ok();  // a broken stream, not a lost node
  }
  const bool adoptable = running.group_world_size >= 1 && running.group_rank >= 0 &&
                         running.group_rank < running.group_world_size &&
                         running.group_world_size <= settings_.max_nodes &&
                         MatchesRecord(node, running);
  if (adoptable &&
      ((!formed_a_round_ && state_ == State::kForming) || (readopt_deadline_ && still_running))) {
    return Readopt(node, running, now);
  }
  // The node's round is over. Its workers must stop: a member is told so by the restart its
  // Join causes; anyone else is told here, once.
  const bool member = state_ == State::kRunning && members_.Contains(node.node_id);
  if (!member) {
    Emit(node.node_id, NodeEvent::Type::kRestart,
         "round " + std::to_string(running.round) + " of this node is over; join the next round");
  }
  return Join(node, now);
}

RendezvousTime JobRounds::ReadoptDeadline(std::chrono::milliseconds silent,
                                          RendezvousTime now) const {
  // heartbeat_timeout from when the first node back last heard the old server: a member that
  // does not come back was as silent as long, whichever server heard it last. But the nodes that
  // are coming back, told as this one was, get a grace of their own from now.
  const std::chrono::milliseconds silent_for = std::min(silent, settings_.heartbeat_timeout);
  const std::chrono::milliseconds grace = std::min(kReadoptGrace, settings_.heartbeat_timeout);
  return std::max(now - silent_for + settings_.heartbeat_timeout, now + grace);
}

Status JobRounds::Readopt(const NodeDescription& node, const RunningRound& running,
                          RendezvousTime now) {
  if (!readopt_deadline_) {
    state_ = State::kRunning;
    formed_a_round_ = true;
    round_ = running.round;
    restarts_used_ = std::max(restarts_used_, running.restart_count);
    members_.AssignEmpty(static_cast<size_t>(running.group_world_size));
    members_with_progress_ = 0;
    succeeded_.clear();
    ClearExpected();
    last_call_deadline_.reset();
    readopt_deadline_ = ReadoptDeadline(running.server_silent, now);
  }
  const std::string& slot = members_.by_rank()[static_cast<size_t>(running.group_rank)];
  if (!slot.empty() && slot != node.node_id) {  // two nodes claim one rank: start afresh
    Node& entry = Describe(node);
    Heard(entry, now);
    SetJoined(entry, true);
    entry.joined_at = now;
    Emit(node.node_id, NodeEvent::Type::kRestart, "group rank claimed twice; join again");
    readopt_deadline_.reset();
    StartNextRound("two nodes claimed group rank " + std::to_string(running.group_rank), now);
    return Status::Ok();
  }
  members_.Fill(static_cast<size_t>(running.group_rank), node.node_id);
  Node& entry = Describe(node);
  Heard(entry, now);
  SetJoined(entry, false);
  entry.previous_group_rank = running.group_rank;
  if (!members_.HasEmptySlots()) readopt_deadline_.reset();  // every member is back
  return Status::Ok();
}

Status JobRounds::Heartbeat(const std::string& node_id, RendezvousTime now,
                            const std::optional<NodeProgress>& progress) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) {
    return NotFoundError("node " + node_id +
                         " is not part of the job (declared lost?); join again");
  }
  Heard(it->second, now);
  if (progress && state_ == State::kRunning && progress->round == round_ &&
      members_.Contains(node_id)) {
    if (!it->second.progress || it->second.progress->round != round_) ++members_with_progress_;
    it->second.progress = progress;
    it->second.progress_at = now;
    for (RankProgress& rank : it->second.progress->ranks) rank.host = it->second.description.host;
    WatchProgress(now);
  }
  return Status::Ok();
}

void JobRounds::WatchProgress(RendezvousTime now) {
  // At most once per sampling period: every agent sends its progress that often, and a search
  // reads every rank of the job, which at thousands of nodes is not for every heartbeat.
  if (!settings_.hang.samples_progress() || now < next_progress_search_) return;
  // Until every member has sent its own (the count, of nodes, spares a walk per heartbeat to
  // find one that has not; an empty slot's member has sent none).
  if (members_.HasEmptySlots() || members_with_progress_ < members_.node_count()) return;
  std::vector<RankProgress> ranks;
  for (const std::string& id : members_.by_rank()) {
    auto it = nodes_.find(id);
    if (it == nodes_.end() || !it->second.progress || it->second.progress->round != round_) {
      return;  // a member not heard from yet: its ranks' progress is unknown
    }
    if (succeeded_.contains(id)) continue;  // its workers are done
    const auto& own = it->second.progress->ranks;
    ranks.insert(ranks.end(), own.begin(), own.end());
  }
  next_progress_search_ = now + settings_.hang.SamplingPeriod();
  if (settings_.hang.watches_stragglers()) {
    for (const StragglerNews& news :
         straggler_watch_.Update(ranks, settings_.hang.straggler_ratio)) {
      if (!news.recovered) ++counters_.stragglers;
      for (const std::string& id : members_.by_rank()) {
        events_.push_back(NodeEvent{
            id, NodeEvent::Type::kStraggler, {}, news.description, 1, std::nullopt, {}, news});
      }
    }
  }
  if (!settings_.hang.enabled()) return;
  auto finding = FindHang(ranks, settings_.hang);
  hung_now_.clear();
  if (finding) {
    for (const RankProgress& rank : finding->hung) hung_now_.insert(rank.global_rank);
  }
  if (!finding || !hang_latch_.Admit(*finding)) return;
  CountHang(*finding, counters_);
  for (const std::string& id : members_.by_rank()) {
    events_.push_back(NodeEvent{
        id, NodeEvent::Type::kHang, {}, finding->description, 1, std::nullopt, *finding, {}});
  }
}

void JobRounds::Leave(const std::string& node_id, RendezvousTime now) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  const std::string reason = "node " + it->second.description.host + " left";
  RemoveNode(node_id, reason, now);
  // A job whose every node has left is over: nobody is left to run it, or to be told. (Lost
  // nodes may come back, as after a server restart: for them the join timeout decides.)
  if (nodes_.empty() && state_ != State::kComplete && state_ != State::kFailed) {
    FailJob(reason + ", the last node of the job", 1);
  }
}

void JobRounds::Disconnected(const std::string& node_id, RendezvousTime now) {
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return;
  it->second.disconnected_at = now;
  lost_at_.Set(node_id, LostAt(it->second));
}

RendezvousTime JobRounds::LostAt(const Node& node) const {
  RendezvousTime lost = node.last_heartbeat + settings_.heartbeat_timeout;
  if (node.disconnected_at) {
    lost =
        std::min(lost, *node.disconnected_at + std::min<std::chrono::milliseconds>(
                                                   settings_.heartbeat_timeout, kReconnectGrace));
  }
  return lost;
}

void JobRounds::WorkerFailed(const std::string& node_id, int64_t round,
                             const WorkerFailure& failure, int exit_status, RendezvousTime now) {
  if (state_ != State::kRunning || round != round_) return;  // stale: that round is over
  if (!members_.Contains(node_id)) return;
  const std::string description = DescribeFailure(failure);
  last_failure_ = description;
  last_worker_failure_ = failure;
  CountWorkerFailure(failure, counters_);
  const bool final_hang =
      !failure.hang.empty() && settings_.hang.action == HangSettings::Action::kFail;
  if (!final_hang && restarts_used_ < settings_.max_restarts) {
    ++restarts_used_;
    failure_seen_at_ = now;
    StartNextRound("worker failure: " + description + " (restart " +
                       std::to_string(restarts_used_) + " of " +
                       std::to_string(settings_.max_restarts) + ")",
                   now, failure);
    return;
  }
  FailJob(description + " (restarts used: " + std::to_string(restarts_used_) + " of " +
              std::to_string(settings_.max_restarts) + ")",
          exit_status, failure);
}

void JobRounds::NodeSucceeded(const std::string& node_id, int64_t round) {
  if (state_ != State::kRunning || round != round_) return;
  if (!members_.Contains(node_id)) return;
  succeeded_.insert(node_id);
  if (succeeded_.size() < members_.size()) return;
  state_ = State::kComplete;
  for (const auto& [id, node] : nodes_) Emit(id, NodeEvent::Type::kJobComplete, "");
}

void JobRounds::Tick(RendezvousTime now) {
  if (state_ == State::kComplete || state_ == State::kFailed) return;
  // By id, as a walk over nodes_ would find them: the first one names the restart.
  std::vector<std::string> lost = lost_at_.Due(now);
  std::sort(lost.begin(), lost.end());
  for (const auto& id : lost) {
    const Node& node = nodes_.at(id);
    const std::string why =
        node.disconnected_at && now - node.last_heartbeat < settings_.heartbeat_timeout
            ? "its agent disconnected and did not come back within " +
                  Seconds(std::min<std::chrono::milliseconds>(settings_.heartbeat_timeout,
                                                              kReconnectGrace))
            : "no heartbeat for " + Seconds(settings_.heartbeat_timeout);
    ++counters_.nodes_lost;
    counters_.lost_node_detection.Observe(
        now - std::max(node.last_heartbeat, node.disconnected_at.value_or(node.last_heartbeat)));
    RemoveNode(id, "node " + node.description.host + " lost: " + why, now);
    if (state_ == State::kFailed) return;
  }
  if (readopt_deadline_ && now >= *readopt_deadline_) {
    readopt_deadline_.reset();
    members_.DropEmptySlots();
    StartNextRound("not every node came back to the restarted rendezvous server within " +
                       Seconds(settings_.heartbeat_timeout),
                   now);
  }
  if (state_ != State::kForming) return;
  if (static_cast<int>(JoinedCount()) < settings_.min_nodes && now >= join_deadline_) {
    FailJob("only " + std::to_string(JoinedCount()) + " of the " +
                std::to_string(settings_.min_nodes) + " nodes needed joined within join_timeout (" +
                Seconds(settings_.join_timeout) + ")",
            1);
    return;
  }
  MaybeCompleteRound(now);
}

std::optional<RendezvousTime> JobRounds::NextDeadline() const {
  if (state_ == State::kComplete || state_ == State::kFailed) return std::nullopt;
  std::optional<RendezvousTime> next;
  auto consider = [&next](RendezvousTime t) {
    if (!next || t < *next) next = t;
  };
  if (auto lost = lost_at_.Earliest()) consider(*lost);
  if (readopt_deadline_) consider(*readopt_deadline_);
  if (state_ == State::kForming) {
    consider(join_deadline_);
    if (last_call_deadline_) consider(*last_call_deadline_);
  }
  return next;
}

std::vector<NodeSnapshot> JobRounds::Nodes(RendezvousTime now) const {
  std::vector<NodeSnapshot> snapshots;
  int first_global_rank = 0;
  const std::vector<std::string>& members = members_.by_rank();
  for (size_t rank = 0; rank < members.size(); ++rank) {
    auto it = nodes_.find(members[rank]);
    if (it == nodes_.end()) continue;  // not back yet after a server restart
    NodeSnapshot snapshot{
        it->second.description,
        static_cast<int>(rank),
        first_global_rank,
        std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.last_heartbeat),
        succeeded_.contains(members[rank]),
        {}};
    if (it->second.progress && it->second.progress->round == round_) {
      const auto since =
          std::chrono::duration_cast<std::chrono::milliseconds>(now - it->second.progress_at);
      snapshot.progress = it->second.progress->ranks;
      for (RankProgress& rank_progress : snapshot.progress) {
        rank_progress.idle += since;
        rank_progress.straggler = straggler_watch_.IsStraggler(rank_progress.global_rank);
        rank_progress.hung = hung_now_.contains(rank_progress.global_rank);
      }
    }
    snapshots.push_back(std::move(snapshot));
    first_global_rank += it->second.description.nproc;
  }
  for (const auto& [id, node] : nodes_) {
    if (members_.Contains(id)) continue;
    snapshots.push_back(
        {node.description,
         -1,
         0,
         std::chrono::duration_cast<std::chrono::milliseconds>(now - node.last_heartbeat),
         false,
         {}});
  }
  return snapshots;
}

std::vector<NodeEvent> JobRounds::TakeEvents() { return std::exchange(events_, {}); }

std::vector<std::string> JobRounds::joined() const {
  std::vector<std::string> ids;
  for (const auto& [id, node] : nodes_) {
    if (node.joined) ids.push_back(id);
  }
  return ids;
}

void JobRounds::MaybeCompleteRound(RendezvousTime now) {
  if (state_ != State::kForming) return;
  const int joined_count = static_cast<int>(JoinedCount());
  if (joined_count >= settings_.max_nodes) {
    CompleteRound(now);
    return;
  }
  if (joined_count < settings_.min_nodes) {
    last_call_deadline_.reset();
    return;
  }
  const bool everyone_expected_is_back = expected_count_ > 0 && expected_waiting_ == 0;
  if (everyone_expected_is_back) {
    CompleteRound(now);
    return;
  }
  if (!last_call_deadline_) last_call_deadline_ = now + settings_.last_call_timeout;
  if (now >= *last_call_deadline_) CompleteRound(now);
}

void JobRounds::CompleteRound(RendezvousTime now) {
  ++counters_.rounds_formed;
  counters_.round_formation.Observe(now - forming_since_);
  if (failure_seen_at_) counters_.restart.Observe(now - *failure_seen_at_);
  failure_seen_at_.reset();
  // Previous members keep their order (and so their ranks when membership is unchanged); new
  // nodes follow in the order they joined. Nodes beyond max_nodes wait for a later round.
  std::vector<const Node*> candidates;
  for (const auto& [id, node] : nodes_) {
    if (node.joined) candidates.push_back(&node);
  }
  std::sort(candidates.begin(), candidates.end(), [](const Node* a, const Node* b) {
    if (a->previous_group_rank.has_value() != b->previous_group_rank.has_value()) {
      return a->previous_group_rank.has_value();
    }
    // The ranks nodes asked for (--node_rank), as torchrun's static rendezvous gives them.
    const int want_a = a->description.requested_group_rank;
    const int want_b = b->description.requested_group_rank;
    if ((want_a >= 0) != (want_b >= 0)) return want_a >= 0;
    if (want_a >= 0 && want_a != want_b) return want_a < want_b;
    if (a->previous_group_rank && *a->previous_group_rank != *b->previous_group_rank) {
      return *a->previous_group_rank < *b->previous_group_rank;
    }
    if (a->joined_at != b->joined_at) return a->joined_at < b->joined_at;
    return a->description.node_id < b->description.node_id;
  });
  if (static_cast<int>(candidates.size()) > settings_.max_nodes) {
    candidates.resize(static_cast<size_t>(settings_.max_nodes));
  }

  members_.Clear();
  int world_size = 0;
  for (const Node* node : candidates) {
    members_.Append(node->description.node_id);
    world_size += node->description.nproc;
  }
  for (auto& [id, node] : nodes_) {
    node.previous_group_rank.reset();
    node.progress.reset();
  }
  members_with_progress_ = 0;
  ClearExpected();
  hang_latch_.Reset();
  hung_now_.clear();
  straggler_watch_.Reset();

  state_ = State::kRunning;
  formed_a_round_ = true;
  succeeded_.clear();
  last_call_deadline_.reset();
  const std::vector<std::string>& members = members_.by_rank();
  const NodeDescription& master = nodes_.at(members.front()).description;
  int first_global_rank = 0;
  for (size_t rank = 0; rank < members.size(); ++rank) {
    Node& node = nodes_.at(members[rank]);
    SetJoined(node, false);
    node.previous_group_rank = static_cast<int>(rank);
    NodeEvent event{members[rank], NodeEvent::Type::kRoundReady, {}, "", 1, std::nullopt, {}, {}};
    event.assignment = {round_,
                        static_cast<int>(rank),
                        static_cast<int>(members_.size()),
                        first_global_rank,
                        world_size,
                        master.host,
                        master.master_port,
                        restarts_used_,
                        /*store_credential=*/""};  // the registry's to add
    events_.push_back(std::move(event));
    first_global_rank += node.description.nproc;
  }
}

void JobRounds::StartNextRound(const std::string& reason, RendezvousTime now,
                               const std::optional<WorkerFailure>& failure) {
  readopt_deadline_.reset();
  members_.DropEmptySlots();
  ClearExpected();
  for (const auto& id : members_.by_rank()) {
    Emit(id, NodeEvent::Type::kRestart, reason, 1, failure);
    if (auto it = nodes_.find(id); it != nodes_.end()) Expect(it->second);
  }
  for (auto& [id, node] : nodes_) {
    if (node.joined) Expect(node);
  }
  state_ = State::kForming;
  forming_since_ = now;
  ++round_;
  members_.Clear();
  members_with_progress_ = 0;
  succeeded_.clear();
  join_deadline_ = now + settings_.join_timeout;
  last_call_deadline_.reset();
  MaybeCompleteRound(now);
}

void JobRounds::RemoveNode(const std::string& node_id, const std::string& reason,
                           RendezvousTime now) {
  EraseNode(node_id);
  if (state_ == State::kRunning && members_.Remove(node_id)) {
    StartNextRound(reason, now);
    return;
  }
  MaybeCompleteRound(now);
}

void JobRounds::FailJob(const std::string& reason, int exit_status,
                        const std::optional<WorkerFailure>& failure) {
  state_ = State::kFailed;
  readopt_deadline_.reset();
  last_failure_ = reason;
  for (const auto& [id, node] : nodes_) {
    Emit(id, NodeEvent::Type::kJobFailed, reason, exit_status, failure);
  }
}

void JobRounds::Emit(const std::string& node_id, NodeEvent::Type type, const std::string& reason,
                     int exit_status, const std::optional<WorkerFailure>& failure) {
  events_.push_back(NodeEvent{node_id, type, {}, reason, exit_status, failure, {}, {}});
}

}  // namespace ddprun
