// The load generator's good clients, whose service under the load is the finding: agents that
// run whole jobs (join, round, heartbeat, succeeded, complete), store clients in their own job
// scopes whose every call must succeed, and waits that must time out on the daemon's clock.
// Each loop runs until the phase reaches kMixOver.
#pragma once

#include <atomic>

#include "class_stats.h"
#include "load_options.h"

namespace ddprun::daemon_load {

struct AgentTotals {
  ClassStats jobs{"good agents: jobs (join, round, heartbeat, succeeded, complete)"};
  ClassStats rounds{"good agents: last join -> every RoundReady"};
  std::atomic<long> rounds_formed{0};
  std::atomic<long> nodes{0};
};

// Jobs of 2-4 nodes, one after another.
void GoodAgentLoop(const Options& options, int index, AgentTotals& totals);

// Set, Get, Add, CompareSet and Wait in turn at options.store_rate, each answer checked.
void GoodStoreLoop(const Options& options, int index, ClassStats& stats);

// The daemon's deadlines under load: a wait for a key nobody sets, timeout 500 ms, must end with
// DEADLINE_EXCEEDED about 500 ms later. Records the lateness (elapsed - 500 ms).
void GoodTimeoutLoop(const Options& options, int index, ClassStats& stats);

}  // namespace ddprun::daemon_load
