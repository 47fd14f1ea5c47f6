// JobRounds: the rendezvous of one multi-node job as a plain state machine: which nodes form
// each round, their ranks, restarts against one job-wide budget, lost nodes, scale-up, and the
// end of the job. It knows nothing of gRPC, threads or the real clock: every call takes `now`,
// and what nodes must be told comes out of TakeEvents(). The gRPC service is an adapter over it.
//
// Protocol, as an agent sees it: Join; wait for kRoundReady (its assignment); run workers while
// heartbeating; on kRestart stop the workers and Join again; on kJobComplete or kJobFailed exit.
// An agent that reconnects while its workers run (a broken stream, a restarted server) calls
// Resume with the round it runs: a server that lost its state adopts that round, and the job goes
// on without a restart once every member is back (or without the members that are not, after
// heartbeat_timeout).
//
// Rounds: a round completes when max_nodes have joined, when every node expected back (the
// previous round's members and the nodes waiting to get in) has joined, or when min_nodes have
// joined and last_call_timeout has passed since the min-th. Not thread-safe: the owner
// serializes calls.
//
// Cost: a join, heartbeat or report is O(log nodes), except what happens once per round and is
// O(nodes) for the events it makes (a round's forming, restart or end) or for what it reads (a
// hang search, at most once per sampling period). A job of tens of thousands of nodes sends that
// many joins and a heartbeat from each every second: nothing per message may walk every node.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/rendezvous/round_types.h"
#include "deadline_index.h"
#include "round_members.h"

namespace ddprun {

class JobRounds {
 public:
  enum class State { kForming, kRunning, kComplete, kFailed };

  // What the server leading a job records of its rounds in a store shared with other servers
  // (job_leadership.h), and what a server taking the job over starts from.
  struct Record {
    State state = State::kForming;
    int64_t round = 0;  // kForming: the round that forms; kRunning: the round that runs
    int restarts_used = 0;
    std::vector<std::string> members;  // kRunning: node ids by group rank ("": not back yet)
    std::string end_reason;            // kFailed
  };

  JobRounds(RendezvousSettings settings, RendezvousTime now);

  // This job's rounds as they stand, for the record.
  Record ToRecord() const;
  // Starts a job another server led from what it recorded, before any node joins here. An ended
  // job stays ended. Otherwise the restart budget goes on from what was used, a new round gets a
  // number of its own, and only a node that comes back with the recorded round and the rank the
  // record gives it is adopted (Resume): a node of an older round, or a round that was ending,
  // joins the next round.
  void TakeOver(const Record& record);

  // A node asks to be in the next round (first join, or re-join after kRestart).
  // FAILED_PRECONDITION when the job has ended; INVALID_ARGUMENT for a malformed description.
  Status Join(const NodeDescription& node, RendezvousTime now);
  // A node that was running `running` when its stream broke comes back. The same round still
  // running here: nothing changes. A server that has not formed a round since it started (it was
  // restarted): the round is adopted. Otherwise the node's round is over: it is told to restart
  // and joins the next round.
  Status Resume(const NodeDescription& node, const RunningRound& running, RendezvousTime now);
  // NOT_FOUND when the node is not part of the job (it was declared lost: it must Join again).
  // `progress`: its ranks' progress (hang detection on). Once every member of the running round
  // has sent its own, the whole job's is searched for a hang (FindHang, on the idle times the
  // agents measured: no clock is compared across hosts); a hang found is kHang to every member,
  // once per stall.
  Status Heartbeat(const std::string& node_id, RendezvousTime now,
                   const std::optional<NodeProgress>& progress = std::nullopt);
  // The node leaves on purpose (its agent got SIGTERM): like a lost node, without the wait.
  void Leave(const std::string& node_id, RendezvousTime now);
  // The node's stream ended without a Leave: its agent died, or the network broke. A live agent
  // reconnects at once; one that does not within min(heartbeat_timeout, kReconnectGrace) is lost.
  void Disconnected(const std::string& node_id, RendezvousTime now);
  static constexpr std::chrono::milliseconds kReconnectGrace{1'000};
  // A worker on the node failed in round `round` (stale reports of older rounds are ignored).
  // `exit_status` is what every agent exits with if the failure ends the job. The restart or
  // job-failed events that follow carry `failure`. A hang under hang_action=fail is never
  // restarted.
  void WorkerFailed(const std::string& node_id, int64_t round, const WorkerFailure& failure,
                    int exit_status, RendezvousTime now);
  // Every worker of the node exited 0 in round `round`.
  void NodeSucceeded(const std::string& node_id, int64_t round);
  // Applies the deadlines that have passed: last call, join timeout, heartbeats.
  void Tick(RendezvousTime now);
  // When Tick next has something to do; nullopt when nothing is pending.
  std::optional<RendezvousTime> NextDeadline() const;

  // The events produced since the last call, oldest first.
  std::vector<NodeEvent> TakeEvents();

  State state() const { return state_; }
  const RendezvousSettings& settings() const { return settings_; }
  // Every node of the job, members of the running round first, by group rank.
  std::vector<NodeSnapshot> Nodes(RendezvousTime now) const;
  int64_t round() const { return round_; }
  int restarts_used() const { return restarts_used_; }
  // The nodes the job holds (members, waiting, disconnected but not yet lost), and whether it
  // holds `node_id`.
  size_t node_count() const { return nodes_.size(); }
  bool HasNode(const std::string& node_id) const { return nodes_.contains(node_id); }
  const std::string& last_failure() const { return last_failure_; }
  const std::optional<WorkerFailure>& last_worker_failure() const { return last_worker_failure_; }
  // What happened to the job so far, for its metrics.
  const JobCounters& counters() const { return counters_; }
  // Members of the current round by group rank (empty while forming).
  const std::vector<std::string>& members() const { return members_.by_rank(); }
  // Nodes that have joined the forming round, or wait to get into the next one.
  std::vector<std::string> joined() const;

 private:
  struct Node {
    NodeDescription description;
    RendezvousTime last_heartbeat;
    std::optional<RendezvousTime> disconnected_at;  // its stream ended; it has not come back
    RendezvousTime joined_at;
    bool joined = false;  // has asked for the next round (change it with SetJoined)
    // The forming round waits for it: a member of the round before, or a node that had asked
    // for the next round when that one ended (change it with Expect, ClearExpected).
    bool expected = false;
    std::optional<int> previous_group_rank;
    std::optional<NodeProgress> progress;  // the last its agent sent
    RendezvousTime progress_at;            // when
  };

  Status ValidateNode(const NodeDescription& node) const;
  // The node's entry (made if new) with `node` as its description, the rank index kept in step.
  Node& Describe(const NodeDescription& node);
  // The node was heard from: its heartbeat is `now`, it is connected; its deadline moves.
  void Heard(Node& node, RendezvousTime now);
  // These keep the counts that MaybeCompleteRound reads in step with the nodes' flags.
  void SetJoined(Node& node, bool joined);
  void Expect(Node& node);
  void ClearExpected();
  // Forgets the node and its place in every index and count.
  void EraseNode(const std::string& node_id);
  // When the node is lost unless it is heard from again.
  RendezvousTime LostAt(const Node& node) const;
  // Whether a node coming back with `running` ran the round the record this job was taken over
  // from gives it (true when the job was not taken over).
  bool MatchesRecord(const NodeDescription& node, const RunningRound& running) const;
  // Fills the node's slot of a round adopted from the nodes that ran it.
  Status Readopt(const NodeDescription& node, const RunningRound& running, RendezvousTime now);
  // When the members of an adopted round that have not come back are dropped, the first node
  // back having heard no server for `silent`.
  RendezvousTime ReadoptDeadline(std::chrono::milliseconds silent, RendezvousTime now) const;
  void MaybeCompleteRound(RendezvousTime now);
  // Searches the running round's progress for a hang and for stragglers, at most once per
  // sampling period; emits kHang for a new hang, kStraggler for each straggler's news.
  void WatchProgress(RendezvousTime now);
  void CompleteRound(RendezvousTime now);
  // Ends the running round: members must stop their workers and join again.
  // `failure`: the worker failure that caused it, if one did.
  void StartNextRound(const std::string& reason, RendezvousTime now,
                      const std::optional<WorkerFailure>& failure = std::nullopt);
  void RemoveNode(const std::string& node_id, const std::string& reason, RendezvousTime now);
  void FailJob(const std::string& reason, int exit_status,
               const std::optional<WorkerFailure>& failure = std::nullopt);
  size_t JoinedCount() const { return joined_count_; }
  void Emit(const std::string& node_id, NodeEvent::Type type, const std::string& reason,
            int exit_status = 1, const std::optional<WorkerFailure>& failure = std::nullopt);

  const RendezvousSettings settings_;
  State state_ = State::kForming;
  int64_t round_ = 0;
  int restarts_used_ = 0;
  std::string last_failure_;
  std::optional<WorkerFailure> last_worker_failure_;
  std::map<std::string, Node> nodes_;  // every node of the job
  RoundMembers members_;               // current round, by group rank ("": not back yet)
  // Indexes and counts over nodes_, so that no message walks every node:
  DeadlineIndex lost_at_;  // each node's LostAt
  // The nodes that ask for a group rank (--node_rank), by that rank: the duplicate check.
  std::map<int, std::set<std::string>> requesting_rank_;
  size_t joined_count_ = 0;           // nodes with `joined`
  size_t expected_count_ = 0;         // nodes with `expected`
  size_t expected_waiting_ = 0;       // nodes with `expected` and not `joined`
  size_t members_with_progress_ = 0;  // members whose `progress` is of the current round
  bool formed_a_round_ = false;       // since this server started
  // Taken over from a record (TakeOver): the round it says runs, and its members, which are the
  // only ones a re-join may adopt; nullopt with taken_over_: none may be.
  bool taken_over_ = false;
  std::optional<int64_t> recorded_round_;
  std::vector<std::string> recorded_members_;
  std::optional<RendezvousTime> readopt_deadline_;  // members_ has empty slots until then
  std::set<std::string> succeeded_;                 // members done in the current round
  RendezvousTime join_deadline_;
  std::optional<RendezvousTime> last_call_deadline_;
  HangLatch hang_latch_;            // of the running round
  std::set<int> hung_now_;          // global ranks the latest hang search named
  StragglerWatch straggler_watch_;  // of the running round
  RendezvousTime next_progress_search_{};
  std::vector<NodeEvent> events_;
  JobCounters counters_;
  RendezvousTime forming_since_;                   // when the forming round began to form
  std::optional<RendezvousTime> failure_seen_at_;  // a worker failure restarts the job
};

}  // namespace ddprun
