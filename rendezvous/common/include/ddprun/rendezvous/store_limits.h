// What every job store shares, the in-memory one of the rendezvous server (key_value_store.h)
// and the etcd one (rendezvous/etcd/etcd_job_store.h): the scope of a job's keys, the limits,
// compare_set's outcome, the checks of a key and a value against the limits, and the count of
// the keys pending waits miss, so that both refuse the same requests with the same messages.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

struct StoreScopeKey {
  std::string job_id;
  int64_t round = 0;
  auto operator<=>(const StoreScopeKey&) const = default;
};

// What the store holds at most; docs/limits.md lists them with the rest of the server's.
struct KeyValueLimits {
  size_t max_job_id_bytes = 256;             // a scope's job id
  size_t max_key_bytes = 1024;               // per key
  size_t max_value_bytes = 1 << 20;          // per value (1 MiB)
  size_t max_job_bytes = 64u << 20;          // keys + values of one job, all rounds (64 MiB)
  size_t max_total_bytes = size_t{1} << 30;  // keys + values of every job together (1 GiB)
  size_t max_keys_per_wait = 1024;           // keys named by one wait
  // Keys that pending waits still miss (each costs about 350 bytes): over one job's waits, so a
  // job that waits on too much is refused before it crowds out the others; and over every wait.
  size_t max_waited_keys_per_job = 64u << 10;
  size_t max_waited_keys = 1u << 20;
};

struct CompareSetOutcome {
  std::string value;  // what the key holds afterwards ("" when still absent)
  bool swapped = false;
};

// INVALID_ARGUMENT for an oversized job id, an empty key or an oversized one.
Status CheckStoreKey(const KeyValueLimits& limits, const StoreScopeKey& scope,
                     const std::string& key);
// RESOURCE_EXHAUSTED for a value over limits.max_value_bytes.
Status CheckStoreValue(const KeyValueLimits& limits, const std::string& key,
                       const std::string& value);

// The keys that a store's pending waits still miss, per job and in all, against the limits'
// max_waited_keys_per_job and max_waited_keys. Not thread-safe: the store's lock guards it.
class WaitedKeyBudget {
 public:
  explicit WaitedKeyBudget(const KeyValueLimits& limits) : limits_(limits) {}
  // Counts `count` more keys for a wait of `job_id`; RESOURCE_EXHAUSTED, counting nothing, when
  // that would go over a bound.
  Status Reserve(const std::string& job_id, size_t count);
  // `count` of them are found, or their wait ended.
  void Release(const std::string& job_id, size_t count);

 private:
  const KeyValueLimits limits_;
  size_t total_ = 0;
  std::map<std::string, size_t> per_job_;
};

}  // namespace ddprun
