// JobStore: the jobs' key-value store as the rendezvous service sees it (what workers reach
// through DDPRUN_STORE_ADDR: set, get, add, compare_set, wait, delete), whichever holds the
// keys: one daemon's memory (KeyValueStore, rendezvous/server/) or an etcd cluster that every
// daemon pointed at it shares (etcd::EtcdJobStore, rendezvous/etcd/). Both give the same
// answers and refuse the same requests with the same messages (store_limits.h). Every method
// may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/rendezvous/store_limits.h"

namespace ddprun {

// What a store holds, for its metrics.
struct StoreUsage {
  size_t keys = 0;
  size_t bytes = 0;  // keys' and values' bytes, as the limits count them
};

class JobStore {
 public:
  using WaiterId = uint64_t;

  virtual ~JobStore() = default;

  // Stores value under key, replacing any previous value, and releases waiters on it.
  // INVALID_ARGUMENT for an empty or oversized key; RESOURCE_EXHAUSTED over a size limit.
  virtual Status Set(const StoreScopeKey& scope, const std::string& key,
                     const std::string& value) = 0;
  // The value under key; NOT_FOUND when absent.
  virtual Result<std::string> Get(const StoreScopeKey& scope, const std::string& key) = 0;
  // Adds delta to the decimal integer under key (absent is 0) and returns the sum.
  // INVALID_ARGUMENT when the stored value is not a decimal integer or the sum overflows.
  virtual Result<int64_t> Add(const StoreScopeKey& scope, const std::string& key,
                              int64_t delta) = 0;
  // PyTorch's compare_set: sets desired when the value equals expected, or when the key is
  // absent and expected is empty.
  virtual Result<CompareSetOutcome> CompareSet(const StoreScopeKey& scope, const std::string& key,
                                               const std::string& expected,
                                               const std::string& desired) = 0;
  // Removes key; whether it existed.
  virtual Result<bool> Delete(const StoreScopeKey& scope, const std::string& key) = 0;

  // Calls on_ready once every key in `keys` has been set, by whoever sets it: at once, on this
  // thread, when they all exist already; else later on another thread (never with a lock of the
  // store held). An id for CancelWait; the caller owns the deadline. INVALID_ARGUMENT for no
  // keys or too many.
  virtual Result<WaiterId> WaitAsync(const StoreScopeKey& scope,
                                     const std::vector<std::string>& keys,
                                     std::function<void()> on_ready) = 0;
  // Removes a waiter. True when it was still pending: on_ready has not run and never will.
  // False when on_ready has run or is about to, or the id is unknown.
  virtual bool CancelWait(WaiterId id) = 0;

  // Forgets every key of the job, in every round (the job has ended long ago). Pending waits of
  // the job are left to their own timeouts.
  virtual Status DropJob(const std::string& job_id) = 0;

  // Waits not yet released or cancelled (for tests and status).
  virtual size_t pending_waiters() const = 0;

  // What the store holds, when it knows that without a call over the network; nullopt else
  // (etcd: its own metrics say it).
  virtual std::optional<StoreUsage> Usage() const { return std::nullopt; }

  // True when calls wait on the network (a remote store): the service runs them on threads of
  // its own, not on gRPC's completion threads. An in-memory store answers at once.
  virtual bool CallsBlock() const = 0;
};

}  // namespace ddprun
