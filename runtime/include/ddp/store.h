// ddp::Store: the job's key-value store as the runtime sees it (gloo's Store): how the ranks of
// one round find each other (ring addresses, NCCL's unique id) and agree (barriers). Keys and
// values are bytes; a store is scoped to one job and round by whoever made it.
//
// Two implementations: the rendezvous server's store, reached over gRPC (what
// ProcessGroup::FromEnv connects), and InMemoryStore (in_memory_store.h), for ranks that are
// threads of one process, as in the collectives' tests. Implementations are thread-safe: any
// thread may call any method, concurrently.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddp {

class Store {
 public:
  virtual ~Store() = default;

  // Sets `key` to `value`, waking those waiting for it.
  virtual ddprun::Status Set(const std::string& key, const std::string& value) = 0;
  // The value of `key`; NOT_FOUND when it is not set. Does not wait.
  virtual ddprun::Result<std::string> Get(const std::string& key) = 0;
  // Blocks until every key is set; DEADLINE_EXCEEDED, naming the keys, after `timeout`.
  virtual ddprun::Status Wait(const std::vector<std::string>& keys,
                              std::chrono::milliseconds timeout) = 0;
  // Adds `delta` to the integer `key` holds (0 when unset) and returns the sum. INVALID_ARGUMENT
  // when the key holds something else or the sum overflows.
  virtual ddprun::Result<int64_t> Add(const std::string& key, int64_t delta) = 0;
  // Removes `key`; whether it was set.
  virtual ddprun::Result<bool> Delete(const std::string& key) = 0;
};

}  // namespace ddp
