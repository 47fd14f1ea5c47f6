// KeyValueStore: the job-scoped key-value store behind the rendezvous service (set, get, wait,
// add, compare_set, delete), as a plain thread-safe class that knows nothing of gRPC.
//
// Keys live in a StoreScope (job id and round). Sizes are limited (KeyValueLimits); going over a
// limit is an error value, never a crash. Waits are asynchronous: WaitAsync registers a callback
// that runs the moment the last awaited key is set; the caller owns the deadline and cancels with
// CancelWait. Every method may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/store_limits.h"

namespace ddprun {

class KeyValueStore {
 public:
  using WaiterId = uint64_t;

  explicit KeyValueStore(KeyValueLimits limits = {}) : limits_(limits) {}
  KeyValueStore(const KeyValueStore&) = delete;
  KeyValueStore& operator=(const KeyValueStore&) = delete;

  // Stores value under key, replacing any previous value, and releases waiters on it.
  // INVALID_ARGUMENT for an empty or oversized key; RESOURCE_EXHAUSTED over a size limit.
  Status Set(const StoreScopeKey& scope, const std::string& key, std::string value);

  // The value under key; NOT_FOUND when absent.
  Result<std::string> Get(const StoreScopeKey& scope, const std::string& key) const;

  // Adds delta to the decimal integer under key (absent is 0) and returns the sum.
  // INVALID_ARGUMENT when the stored value is not a decimal integer or the sum overflows.
  Result<int64_t> Add(const StoreScopeKey& scope, const std::string& key, int64_t delta);

  // PyTorch's compare_set: sets desired when the value equals expected, or when the key is absent
  // and expected is empty.
  Result<CompareSetOutcome> CompareSet(const StoreScopeKey& scope, const std::string& key,
                                       const std::string& expected, std::string desired);

  // Removes key; returns whether it existed.
  bool Delete(const StoreScopeKey& scope, const std::string& key);

  // Calls on_ready once every key in `keys` has been set (at once, on this thread, if they all
  // exist already; else on the thread of the Set that completes them, after the store's lock is
  // released). Returns an id for CancelWait. INVALID_ARGUMENT for no keys or too many.
  Result<WaiterId> WaitAsync(const StoreScopeKey& scope, const std::vector<std::string>& keys,
                             std::function<void()> on_ready);

  // Removes a waiter. True when it was still pending: on_ready has not run and never will.
  // False when on_ready has run or is about to, or the id is unknown.
  bool CancelWait(WaiterId id);

  // Forgets every key of the job, in every round (the job has ended long ago). Pending waits of
  // the job are left to their own timeouts.
  void DropJob(const std::string& job_id);

  // Number of pending waiters (for tests and status).
  size_t pending_waiters() const;

 private:
  struct Waiter {
    StoreScopeKey scope;
    std::set<std::string> missing_keys;
    std::function<void()> on_ready;
  };
  using EntryKey = std::pair<StoreScopeKey, std::string>;

  // Stores value and collects the callbacks of waiters it completes.
  Status StoreLocked(const StoreScopeKey& scope, const std::string& key, std::string value,
                     std::vector<std::function<void()>>& ready) REQUIRES(mu_);

  // A waiter of `scope` misses `count` keys less (found, or the wait ended).
  void ForgetWaitedKeys(const StoreScopeKey& scope, size_t count) REQUIRES(mu_);

  const KeyValueLimits limits_;
  mutable Mutex mu_;
  std::map<EntryKey, std::string> entries_ GUARDED_BY(mu_);
  std::map<std::string, size_t> job_bytes_ GUARDED_BY(mu_);
  size_t total_bytes_ GUARDED_BY(mu_) = 0;  // the sum of job_bytes_
  size_t waited_keys_ GUARDED_BY(mu_) = 0;  // the sum of the waiters' missing_keys
  std::map<std::string, size_t> job_waited_keys_ GUARDED_BY(mu_);  // the same, by job id
  std::map<WaiterId, Waiter> waiters_ GUARDED_BY(mu_);
  std::map<EntryKey, std::set<WaiterId>> waiters_by_key_ GUARDED_BY(mu_);
  WaiterId next_waiter_id_ GUARDED_BY(mu_) = 1;
};

}  // namespace ddprun
