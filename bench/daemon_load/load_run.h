// The load: a baseline of good clients only, then the mix (the same good clients beside every
// bad and vanishing class, with a crowd of streams and pending waits held throughout), each for
// its seconds; then every client stops and the daemon's state is read.
#pragma once

#include <map>
#include <string>

#include "bad_clients.h"
#include "class_stats.h"
#include "good_clients.h"
#include "load_options.h"

namespace ddprun::daemon_load {

// Every class of client, with what it recorded.
struct Clients {
  AgentTotals agents;
  ClassStats store{"good store: Set/Get/Add/CompareSet/Wait"};
  ClassStats timeouts{"good: Wait timeout 500 ms, lateness of DEADLINE_EXCEEDED"};
  BadKinds bad;
  AbsurdOutcomes absurd;
  ClassStats cancelled{"vanish: 2-node round, wait, then cancel all (fresh channel)"};
  ClassStats vanished{"vanish: child process joins 20 + waits 20, then _exit"};
};

// What the load saw beyond the clients' own records.
struct LoadFigures {
  long rss_baseline = 0;  // the daemon's VmRSS (KiB) at the end of the baseline
  double mix_s = 0;       // the mix's seconds, as measured
  int crowd_ready = 0;    // crowd streams that got RoundReady
  long rss_mix_end = 0;
  int crowd_other = 0;  // crowd streams that ended other than CANCELLED
  std::string crowd_example;
  std::map<std::string, int> wait_endings;  // the held waits' endings by code
  long nodes_left = 0;
  long jobs_after_mix = 0;
  long rss_after_clients = 0;
  bool alive = false;  // the daemon at the end
};

// `self`: this program's path, which the vanish class runs with --child.
LoadFigures RunLoad(const Options& options, const std::string& self, Clients& clients);

}  // namespace ddprun::daemon_load
