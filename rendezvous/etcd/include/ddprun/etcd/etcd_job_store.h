// EtcdJobStore: the JobStore (job_store.h) kept in etcd instead of one daemon's memory, so that
// every daemon pointed at the same cluster serves the same keys and a daemon's loss loses none
// (docs/control_plane.md, invariant 4). The same answers as the in-memory KeyValueStore
// (rendezvous/server/), on the same StoreScopeKey, with its per-key and per-value limits; every
// operation is one etcd request, or a compare-and-swap retried on a conflict, so two daemons
// serving one job never lose an update. Calls wait on the network (CallsBlock). Thread-safe.
//
// Keys: "<prefix>jobs/<job>/kv/<round>/<key>", the job id escaped ('%' and '/' as %25 and %2F).
// Limits: a value of at most 1 MiB and a key of at most 1 KiB, so that a request stays within
// etcd's 1.5 MiB; a job's total is bounded by etcd's own quota (--quota-backend-bytes), not by
// ddprun's 64 MiB of the in-memory store.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/etcd/etcd_client.h"
#include "ddprun/rendezvous/job_store.h"
#include "ddprun/rendezvous/store_limits.h"

namespace ddprun::etcd {

class EtcdJobStore final : public JobStore {
 public:
  // How the store's asynchronous waits watch etcd: one watch of every job's keys (a daemon, which
  // serves many jobs), or one of each job's keys that has waits (an agent's server, which serves
  // one job: it hears nothing of the other jobs' writes).
  enum class WatchScope { kEveryJob, kEachJob };
  // Jobs a kEachJob store watches at most; a wait of one more is refused (RESOURCE_EXHAUSTED).
  static constexpr size_t kMostWatchedJobs = 64;

  // `prefix` ends with '/' ("/ddprun/").
  EtcdJobStore(EtcdClient& client, std::string prefix, KeyValueLimits limits = {},
               WatchScope watch_scope = WatchScope::kEveryJob);
  ~EtcdJobStore() override;
  EtcdJobStore(const EtcdJobStore&) = delete;
  EtcdJobStore& operator=(const EtcdJobStore&) = delete;

  // JobStore's operations (job_store.h).
  Status Set(const StoreScopeKey& scope, const std::string& key, const std::string& value) override;
  Result<std::string> Get(const StoreScopeKey& scope, const std::string& key) override;
  Result<int64_t> Add(const StoreScopeKey& scope, const std::string& key, int64_t delta) override;
  Result<CompareSetOutcome> CompareSet(const StoreScopeKey& scope, const std::string& key,
                                       const std::string& expected,
                                       const std::string& desired) override;
  Result<bool> Delete(const StoreScopeKey& scope, const std::string& key) override;
  // Returns once every key is set, whichever daemon set it; DEADLINE_EXCEEDED naming the keys
  // still missing after `timeout`.
  Status Wait(const StoreScopeKey& scope, const std::vector<std::string>& keys,
              std::chrono::milliseconds timeout);
  // JobStore's asynchronous wait, whichever daemon sets the keys: on_ready runs at once, on this
  // thread, if every key is set; else on a watch thread of the store, which the first such wait
  // starts (of every job's keys, or of the job's: WatchScope).
  Result<WaiterId> WaitAsync(const StoreScopeKey& scope, const std::vector<std::string>& keys,
                             std::function<void()> on_ready) override EXCLUDES(mu_);
  bool CancelWait(WaiterId id) override EXCLUDES(mu_);
  Status DropJob(const std::string& job_id) override;
  size_t pending_waiters() const override EXCLUDES(mu_);
  bool CallsBlock() const override { return true; }

  // The etcd key of a store key (for tests and tools).
  std::string EtcdKeyOf(const StoreScopeKey& scope, const std::string& key) const;

 private:
  std::string JobPrefix(const std::string& job_id) const;
  Status CheckWait(const StoreScopeKey& scope, const std::vector<std::string>& keys) const;
  // Watches the keys of job `job_id` (of every job, with kEveryJob) unless it does already.
  Status StartWatching(const std::string& job_id) REQUIRES(mu_);
  // `etcd_key` has been set: releases the waiters it completes.
  void Seen(const std::string& etcd_key) EXCLUDES(mu_);

  struct Waiter {
    std::string job_id = {};
    std::set<std::string> missing = {};  // etcd keys
    std::function<void()> on_ready = {};
  };

  EtcdClient& client_;
  const std::string prefix_;
  const KeyValueLimits limits_;
  mutable Mutex mu_;
  std::map<WaiterId, Waiter> waiters_ GUARDED_BY(mu_);
  std::map<std::string, std::set<WaiterId>> waiters_by_key_ GUARDED_BY(mu_);
  WaiterId next_waiter_id_ GUARDED_BY(mu_) = 1;
  WaitedKeyBudget waited_keys_ GUARDED_BY(mu_){limits_};  // the waiters' missing keys
  const WatchScope watch_scope_;
  struct Watch {
    std::unique_ptr<EtcdClient::WatchStop> stop;
    std::thread thread;
  };
  // By job id; with kEveryJob, one under "". A thread is joined only with mu_ not held (its
  // callback takes mu_).
  std::map<std::string, Watch> watches_ GUARDED_BY(mu_);
};

}  // namespace ddprun::etcd
