// The plain types of the rendezvous protocol, shared by the server's round logic (JobRounds), the
// agents' session client and `ddprun status`. No gRPC, no behaviour.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/hang_finder.h"
#include "ddprun/base/latency_histogram.h"
#include "ddprun/base/straggler_watch.h"
#include "ddprun/base/worker_failure.h"

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
  // Agent side: how long the agent that hosts the embedded server keeps serving after the job
  // ended, so that every other node learns the outcome.
  std::chrono::milliseconds close_timeout{5'000};
  HangSettings hang;  // --hang_timeout and its kin
};

struct NodeDescription {
  std::string node_id;  // unique per agent (host, pid, nonce)
  std::string host;     // address the other nodes reach it at
  int nproc = 1;        // workers it runs
  int master_port = 0;  // a port it reserved, used as MASTER_PORT if it becomes group rank 0
  // The group rank it asks for (--node_rank, SLURM_NODEID), as torchrun's static rendezvous
  // gives it; -1: any (ranks follow the order of joining).
  int requested_group_rank = -1;
  std::string scheduler{};  // what runs the agent ("Slurm job 1234, step 0"); empty: nothing
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
  // What the node's workers present as DDPRUN_TOKEN: the job's store credential, good for this
  // job's store keys only and only while the job lives (empty: the server needs no token).
  std::string store_credential;
};

// The round a reconnecting node's workers are running (see Resume).
struct RunningRound {
  int64_t round = 0;
  int group_rank = 0;
  int group_world_size = 0;
  int restart_count = 0;
  // The job's store credential its workers hold: a server that lost the job adopts it, so
  // the workers' store calls go on being accepted.
  std::string store_credential;
  // How long the node had heard no server when it sent this (since its stream broke): a server
  // that adopts the round counts the members that do not come back from then. 0: unknown.
  std::chrono::milliseconds server_silent{0};
};

struct NodeEvent {
  enum class Type { kRoundReady, kRestart, kJobComplete, kJobFailed, kHang, kStraggler };
  std::string node_id;
  Type type;
  NodeAssignment assignment;  // kRoundReady
  std::string reason;         // kRestart, kJobFailed: why, for the node's log and report
  int exit_status = 1;        // kJobFailed: what every agent exits with
  // kRestart, kJobFailed: the worker failure behind it, when one is (not for a lost node).
  std::optional<WorkerFailure> failure;
  HangFinding hang;         // kHang
  StragglerNews straggler;  // kStraggler
};

// A node's ranks' progress in a round, as its agent sampled it.
struct NodeProgress {
  int64_t round = 0;
  std::vector<RankProgress> ranks;
};

// One node as `ddprun status` shows it.
struct NodeSnapshot {
  NodeDescription description;
  int group_rank = -1;  // -1: not in the running round
  int first_global_rank = 0;
  std::chrono::milliseconds heartbeat_age{0};
  bool succeeded = false;
  std::vector<RankProgress> progress;  // its ranks' (hang detection on); idle as of the snapshot
};

// What happened to one job since the server took it, for its metrics (docs/metrics.md). Each
// count only grows; the server's time (RendezvousTime) measures every latency.
struct JobCounters {
  int64_t rounds_formed = 0;  // RoundReady sent (a round adopted after a server restart: not)
  int64_t nodes_lost = 0;     // declared lost: silent past heartbeat_timeout, or gone
  int64_t hangs = 0;          // hangs found (each stall once)
  int64_t stragglers = 0;     // ranks named stragglers (not their recoveries)
  // Worker failures reported, by cause: an exit code, a signal, no start, stopped as hung.
  int64_t worker_exits = 0;
  int64_t worker_signals = 0;
  int64_t worker_spawn_failures = 0;
  int64_t worker_hangs = 0;
  // From when a round began to form (the job's first join; the end of the round before) to its
  // RoundReady.
  LatencyHistogram round_formation;
  // From a worker failure's report to the RoundReady of the round that restarts it.
  LatencyHistogram restart;
  // From when a node was last heard (its last heartbeat, or its stream's end) to its being
  // declared lost.
  LatencyHistogram lost_node_detection;
  // From the last progress of the hung ranks (the most recent of theirs) to the hang's finding.
  LatencyHistogram hang_detection;
};

// One job as `ddprun status` shows it.
struct JobSnapshot {
  std::string job_id;
  std::string state;  // "forming", "running", "complete", "failed"
  int64_t round = 0;
  RendezvousSettings settings;
  int restarts_used = 0;
  std::string last_failure;  // one line: the last worker failure, or why the job failed
  std::optional<WorkerFailure> last_worker_failure;
  std::vector<NodeSnapshot> nodes;
  JobCounters counters;
};

}  // namespace ddprun
