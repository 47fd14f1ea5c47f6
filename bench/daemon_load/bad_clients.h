// The load generator's bad clients, each kind on threads of its own through the mix: values
// and keys over the limits, waits on too many keys, store jobs filled past their total,
// malformed messages, bytes that are not HTTP/2, calls without the token or with a wrong one,
// and joins with absurd settings. Each must be refused (or handled) without hurting the good.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "class_stats.h"
#include "load_options.h"

namespace ddprun::daemon_load {

constexpr int kBadKinds = 9;  // BadLoop's `kind`: 0 to 8, the members of BadKinds in order

struct BadKinds {
  ClassStats value_store{"bad: Set value 1 MiB + 1 (store limit)"};
  ClassStats value_transport{"bad: Set value 2 MiB (message limit)"};
  ClassStats key_long{"bad: key of 1025 bytes (Set, Add, CompareSet, Wait)"};
  ClassStats wait_keys{"bad: Wait on 2000 keys"};
  ClassStats fill{"bad: fill jobs past 64 MiB (1 MB values)"};
  ClassStats garbage_set{"bad: malformed bytes to /Set"};
  ClassStats garbage_session{"bad: malformed bytes to /Session"};
  ClassStats raw_tcp{"bad: 4 KiB of non-HTTP/2 bytes on a TCP connection"};
  ClassStats unauthenticated{"bad: no token / wrong token (Set, Session)"};
  ClassStats absurd{"bad: joins with absurd settings (see below)"};
  std::mutex fill_mu;
  std::vector<long> fill_accepted_bytes;  // per fill job
};

// Calls of one kind at options.bad_rate while the phase is kMix.
void BadLoop(const Options& options, int kind, int index, BadKinds& bad);

// Joins with absurd settings: what the daemon answered to each, as "variant -> outcome".
struct AbsurdOutcomes {
  std::mutex mu;
  std::map<std::string, std::map<std::string, long>> seen;
  void Add(const std::string& variant, const std::string& outcome) {
    std::lock_guard lock(mu);
    ++seen[variant][outcome];
  }
};

constexpr int kAbsurdVariants = 11;

// One variant of absurd join (`which`: 0 to kAbsurdVariants - 1), about once a second, on its
// own channel and thread, while the phase is kMix.
void AbsurdLoop(const Options& options, int which, BadKinds& bad, AbsurdOutcomes& outcomes);

}  // namespace ddprun::daemon_load
