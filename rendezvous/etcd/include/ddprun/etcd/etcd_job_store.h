// EtcdJobStore: the jobs' key-value store (what workers reach through DDPRUN_STORE_ADDR: set,
// get, add, compare_set, wait, delete) kept in etcd instead of one daemon's memory, so that
// every daemon pointed at the same cluster serves the same keys and a daemon's loss loses none
// (docs/control_plane.md, invariant 4). The same operations and the same answers as the
// in-memory KeyValueStore (rendezvous/server/), on the same StoreScopeKey, with its per-key and
// per-value limits; every operation is one etcd request, or a compare-and-swap retried on a
// conflict, so two daemons serving one job never lose an update. Thread-safe.
//
// Keys: "<prefix>jobs/<job>/kv/<round>/<key>", the job id escaped ('%' and '/' as %25 and %2F).
// Limits: a value of at most 1 MiB and a key of at most 1 KiB, so that a request stays within
// etcd's 1.5 MiB; a job's total is bounded by etcd's own quota (--quota-backend-bytes), not by
// ddprun's 64 MiB of the in-memory store.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/etcd/etcd_client.h"
#include "ddprun/rendezvous/store_limits.h"

namespace ddprun::etcd {

class EtcdJobStore {
 public:
  // `prefix` ends with '/' ("/ddprun/").
  EtcdJobStore(EtcdClient& client, std::string prefix, KeyValueLimits limits = {});

  Status Set(const StoreScopeKey& scope, const std::string& key, const std::string& value);
  // NOT_FOUND when absent.
  Result<std::string> Get(const StoreScopeKey& scope, const std::string& key);
  // The decimal integer under key (absent is 0) plus delta; INVALID_ARGUMENT when the value is
  // not one or the sum overflows.
  Result<int64_t> Add(const StoreScopeKey& scope, const std::string& key, int64_t delta);
  // PyTorch's compare_set: desired when the value equals expected, or the key is absent and
  // expected is empty.
  Result<CompareSetOutcome> CompareSet(const StoreScopeKey& scope, const std::string& key,
                                       const std::string& expected, const std::string& desired);
  Result<bool> Delete(const StoreScopeKey& scope, const std::string& key);
  // Returns once every key is set, whichever daemon set it; DEADLINE_EXCEEDED naming the keys
  // still missing after `timeout`.
  Status Wait(const StoreScopeKey& scope, const std::vector<std::string>& keys,
              std::chrono::milliseconds timeout);
  // Every key of the job, in every round.
  Status DropJob(const std::string& job_id);

  // The etcd key of a store key (for tests and tools).
  std::string EtcdKeyOf(const StoreScopeKey& scope, const std::string& key) const;

 private:
  std::string JobPrefix(const std::string& job_id) const;

  EtcdClient& client_;
  const std::string prefix_;
  const KeyValueLimits limits_;
};

}  // namespace ddprun::etcd
