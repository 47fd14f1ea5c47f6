// JobRounds: the rendezvous of one multi-node job as a plain state machine: which nodes form
// each round, their ranks, restarts against one job-wide budget, lost nodes, scale-up, and the
// end of the job. It knows nothing of gRPC, threads or the real clock: every call takes `now`,
// and what nodes must be told comes out of TakeEvents(). The gRPC service is an adapter over it.
//
// Protocol, as an agent sees it: Join; wait for kRoundReady (its assignment); run workers while
// heartbeating; on kRestart stop the workers and Join again; on kJobComplete or kJobFailed exit.
//
// Rounds: a round completes when max_nodes have joined, when every node expected back (the
// previous round's members and the nodes waiting to get in) has joined, or when min_nodes have
// joined and last_call_timeout has passed since the min-th. Not thread-safe: the owner
// serializes calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ddprun/status.h"

namespace ddprun {

using RendezvousClock = std::chrono::steady_clock;
using RendezvousTime = RendezvousClock::time_point;

struct RendezvousSettings {
  int min_nodes = 1;
  int max_nodes = 1;
  int max_restarts = 0;                                // worker failures restarted, job-wide
  std::chrono::milliseconds join_timeout{600'000};     // to reach min_nodes
  std::chrono::milliseconds last_call_timeout{1'000};  // after min_nodes, for stragglers
  std::chrono::milliseconds heartbeat_timeout{3'000};  // silence that makes a node lost
};

struct NodeDescription {
  std::string node_id;  // unique per agent (host, pid, nonce)
  std::string host;     // address the other nodes reach it at
  int nproc = 1;        // workers it runs
  int master_port = 0;  // a port it reserved, used as MASTER_PORT if it becomes group rank 0
};

// What a node learns when its round completes.
struct NodeAssignment {
  int64_t round = 0;
  int group_rank = 0;
  int group_world_size = 0;
  int first_global_rank = 0;
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  int restart_count = 0;  // job-wide restarts used so far
};

struct NodeEvent {
  enum class Type { kRoundReady, kRestart, kJobComplete, kJobFailed };
  std::string node_id;
  Type type;
  NodeAssignment assignment;  // kRoundReady
  std::string reason;         // kRestart, kJobFailed: why, for the node's log and report
};

class JobRounds {
 public:
  enum class State { kForming, kRunning, kComplete, kFailed };

  JobRounds(RendezvousSettings settings, RendezvousTime now);

  // A node asks to be in the next round (first join, or re-join after kRestart).
  // FAILED_PRECONDITION when the job has ended; INVALID_ARGUMENT for a malformed description.
  Status Join(const NodeDescription& node, RendezvousTime now);
  // NOT_FOUND when the node is not part of the job (it was declared lost: it must Join again).
  Status Heartbeat(const std::string& node_id, RendezvousTime now);
  // The node leaves on purpose (its agent got SIGTERM): like a lost node, without the wait.
  void Leave(const std::string& node_id, RendezvousTime now);
  // A worker on the node failed in round `round` (stale reports of older rounds are ignored).
  void WorkerFailed(const std::string& node_id, int64_t round, const std::string& description,
                    RendezvousTime now);
  // Every worker of the node exited 0 in round `round`.
  void NodeSucceeded(const std::string& node_id, int64_t round);
  // Applies the deadlines that have passed: last call, join timeout, heartbeats.
  void Tick(RendezvousTime now);
  // When Tick next has something to do; nullopt when nothing is pending.
  std::optional<RendezvousTime> NextDeadline() const;

  // The events produced since the last call, oldest first.
  std::vector<NodeEvent> TakeEvents();

  State state() const { return state_; }
  int64_t round() const { return round_; }
  int restarts_used() const { return restarts_used_; }
  const std::string& last_failure() const { return last_failure_; }
  // Members of the current round by group rank (empty while forming).
  const std::vector<std::string>& members() const { return members_; }
  // Nodes that have joined the forming round, or wait to get into the next one.
  std::vector<std::string> joined() const;

 private:
  struct Node {
    NodeDescription description;
    RendezvousTime last_heartbeat;
    RendezvousTime joined_at;
    bool joined = false;  // has asked for the next round
    std::optional<int> previous_group_rank;
  };

  void MaybeCompleteRound(RendezvousTime now);
  void CompleteRound();
  // Ends the running round: members must stop their workers and join again.
  void StartNextRound(const std::string& reason, RendezvousTime now);
  void RemoveNode(const std::string& node_id, const std::string& reason, RendezvousTime now);
  void FailJob(const std::string& reason);
  size_t JoinedCount() const;
  void Emit(const std::string& node_id, NodeEvent::Type type, const std::string& reason);

  const RendezvousSettings settings_;
  State state_ = State::kForming;
  int64_t round_ = 0;
  int restarts_used_ = 0;
  std::string last_failure_;
  std::map<std::string, Node> nodes_;  // every node of the job
  std::vector<std::string> members_;   // current round, by group rank
  std::set<std::string> succeeded_;    // members done in the current round
  std::set<std::string> expected_;     // nodes the forming round waits for
  RendezvousTime join_deadline_;
  std::optional<RendezvousTime> last_call_deadline_;
  std::vector<NodeEvent> events_;
};

}  // namespace ddprun
