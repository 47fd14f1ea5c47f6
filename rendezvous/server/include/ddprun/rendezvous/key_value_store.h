// KeyValueStore: the in-memory JobStore (job_store.h), one daemon's or one launcher's: the
// default store behind the rendezvous service, as a plain thread-safe class that knows nothing
// of gRPC.
//
// Keys live in a StoreScope (job id and round). Sizes are limited (KeyValueLimits), the job's
// and the store's totals too; going over a limit is an error value, never a crash. A wait's
// callback runs on the thread of the Set that completes it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/job_store.h"
#include "ddprun/rendezvous/store_limits.h"

namespace ddprun {

class KeyValueStore final : public JobStore {
 public:
  explicit KeyValueStore(KeyValueLimits limits = {}) : limits_(limits) {}
  KeyValueStore(const KeyValueStore&) = delete;
  KeyValueStore& operator=(const KeyValueStore&) = delete;

  Status Set(const StoreScopeKey& scope, const std::string& key, const std::string& value) override;
  Result<std::string> Get(const StoreScopeKey& scope, const std::string& key) override;
  Result<int64_t> Add(const StoreScopeKey& scope, const std::string& key, int64_t delta) override;
  Result<CompareSetOutcome> CompareSet(const StoreScopeKey& scope, const std::string& key,
                                       const std::string& expected,
                                       const std::string& desired) override;
  Result<bool> Delete(const StoreScopeKey& scope, const std::string& key) override;
  Result<WaiterId> WaitAsync(const StoreScopeKey& scope, const std::vector<std::string>& keys,
                             std::function<void()> on_ready) override;
  bool CancelWait(WaiterId id) override;
  Status DropJob(const std::string& job_id) override;
  size_t pending_waiters() const override;
  std::optional<StoreUsage> Usage() const override;
  bool CallsBlock() const override { return false; }

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

  const KeyValueLimits limits_;
  mutable Mutex mu_;
  std::map<EntryKey, std::string> entries_ GUARDED_BY(mu_);
  std::map<std::string, size_t> job_bytes_ GUARDED_BY(mu_);
  size_t total_bytes_ GUARDED_BY(mu_) = 0;                // the sum of job_bytes_
  WaitedKeyBudget waited_keys_ GUARDED_BY(mu_){limits_};  // the waiters' missing_keys
  std::map<WaiterId, Waiter> waiters_ GUARDED_BY(mu_);
  std::map<EntryKey, std::set<WaiterId>> waiters_by_key_ GUARDED_BY(mu_);
  WaiterId next_waiter_id_ GUARDED_BY(mu_) = 1;
};

}  // namespace ddprun
