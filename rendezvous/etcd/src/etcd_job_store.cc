// EtcdJobStore; see etcd_job_store.h.
#include "ddprun/etcd/etcd_job_store.h"

#include "ddprun/base/status_macros.h"
#include "ddprun/base/store_add.h"
#include "ddprun/etcd/etcd_layout.h"
#include "etcd_txn.h"

namespace ddprun::etcd {
namespace {

namespace pb = etcdserverpb;

// A read-modify-write that keeps losing to other writers of the key gives up after this many
// tries (each loss means another writer succeeded, so the store as a whole progresses).
constexpr int kMaxCasAttempts = 64;

}  // namespace

EtcdJobStore::EtcdJobStore(EtcdClient& client, std::string prefix, KeyValueLimits limits,
                           WatchScope watch_scope)
    : client_(client), prefix_(std::move(prefix)), limits_(limits), watch_scope_(watch_scope) {}

EtcdJobStore::~EtcdJobStore() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    for (auto& [job_id, watch] : watches_) {
      watch.stop->Stop();
      threads.push_back(std::move(watch.thread));
    }
  }
  for (std::thread& thread : threads) thread.join();
}

std::string EtcdJobStore::JobPrefix(const std::string& job_id) const {
  return JobKeysPrefix(prefix_, job_id) + "kv/";
}

std::string EtcdJobStore::EtcdKeyOf(const StoreScopeKey& scope, const std::string& key) const {
  return JobPrefix(scope.job_id) + std::to_string(scope.round) + "/" + key;
}

Status EtcdJobStore::Set(const StoreScopeKey& scope, const std::string& key,
                         const std::string& value) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  RETURN_IF_ERROR(CheckStoreValue(limits_, key, value));
  return client_.Put(EtcdKeyOf(scope, key), value).status();
}

Result<std::string> EtcdJobStore::Get(const StoreScopeKey& scope, const std::string& key) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  ASSIGN_OR_RETURN(auto kv, client_.Get(EtcdKeyOf(scope, key)));
  if (!kv) return NotFoundError("store key '" + key + "' is not set");
  return kv->value;
}

Result<int64_t> EtcdJobStore::Add(const StoreScopeKey& scope, const std::string& key,
                                  int64_t delta) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  const std::string etcd_key = EtcdKeyOf(scope, key);
  for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    ASSIGN_OR_RETURN(auto seen, client_.Get(etcd_key));
    ASSIGN_OR_RETURN(int64_t sum, AddToStoredInteger(seen ? &seen->value : nullptr, delta, key));
    pb::TxnRequest txn;
    CompareUnchanged(txn, etcd_key, seen);
    AddPut(txn, etcd_key, std::to_string(sum));
    ASSIGN_OR_RETURN(TxnOutcome outcome, client_.Txn(txn));
    if (outcome.succeeded) return sum;
  }
  return Status(StatusCode::kAborted, "add to store key '" + key + "' lost to other writers " +
                                          std::to_string(kMaxCasAttempts) + " times in a row");
}

Result<CompareSetOutcome> EtcdJobStore::CompareSet(const StoreScopeKey& scope,
                                                   const std::string& key,
                                                   const std::string& expected,
                                                   const std::string& desired) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  RETURN_IF_ERROR(CheckStoreValue(limits_, key, desired));
  const std::string etcd_key = EtcdKeyOf(scope, key);
  for (int attempt = 0; attempt < kMaxCasAttempts; ++attempt) {
    // etcd compares a value only of a key that exists; "absent" is a compare of its creation.
    // So: read, decide as PyTorch does, and write only if the key is still as read.
    ASSIGN_OR_RETURN(auto seen, client_.Get(etcd_key));
    const bool matches = seen ? seen->value == expected : expected.empty();
    if (!matches) return CompareSetOutcome{.value = seen ? seen->value : "", .swapped = false};
    pb::TxnRequest txn;
    CompareUnchanged(txn, etcd_key, seen);
    AddPut(txn, etcd_key, desired);
    ASSIGN_OR_RETURN(TxnOutcome outcome, client_.Txn(txn));
    if (outcome.succeeded) return CompareSetOutcome{.value = desired, .swapped = true};
  }
  return Status(StatusCode::kAborted, "compare_set of store key '" + key +
                                          "' lost to other writers " +
                                          std::to_string(kMaxCasAttempts) + " times in a row");
}

Result<bool> EtcdJobStore::Delete(const StoreScopeKey& scope, const std::string& key) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  // A prefix delete of the exact key would also take "key..." keys: delete the one key only.
  pb::TxnRequest txn;
  auto* erase = txn.add_success()->mutable_request_delete_range();
  erase->set_key(EtcdKeyOf(scope, key));
  ASSIGN_OR_RETURN(TxnOutcome outcome, client_.Txn(txn));
  return outcome.responses.at(0).response_delete_range().deleted() > 0;
}

Status EtcdJobStore::Wait(const StoreScopeKey& scope, const std::vector<std::string>& keys,
                          std::chrono::milliseconds timeout) {
  if (keys.empty()) return InvalidArgumentError("a wait names no key");
  if (keys.size() > limits_.max_keys_per_wait) {
    return InvalidArgumentError("wait names " + std::to_string(keys.size()) +
                                " keys; the limit is " + std::to_string(limits_.max_keys_per_wait));
  }
  for (const std::string& key : keys) RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  // One key after the other: a set key stays set (until a delete), so once each has been seen
  // set, all are.
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string etcd_key = EtcdKeyOf(scope, keys[i]);
    while (true) {
      pb::TxnRequest read;  // the key and the store's revision, in one request
      read.add_success()->mutable_request_range()->set_key(etcd_key);
      ASSIGN_OR_RETURN(TxnOutcome outcome, client_.Txn(read));
      if (outcome.responses.at(0).response_range().kvs_size() > 0) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      std::optional<KeyChange> change;
      if (left.count() > 0) {
        ASSIGN_OR_RETURN(change, client_.WaitForChange(etcd_key, outcome.revision, left));
      }
      if (!change) {
        return DeadlineExceededError(
            "wait for " + std::to_string(keys.size()) + " key(s) timed out after " +
            std::to_string(timeout.count()) + " ms; '" + keys[i] + "' and " +
            std::to_string(keys.size() - i - 1) + " after it not checked yet");
      }
      if (!change->deleted) break;
    }
  }
  return Status::Ok();
}

Status EtcdJobStore::CheckWait(const StoreScopeKey& scope,
                               const std::vector<std::string>& keys) const {
  if (keys.empty()) return InvalidArgumentError("a wait names no key");
  if (keys.size() > limits_.max_keys_per_wait) {
    return InvalidArgumentError("wait names " + std::to_string(keys.size()) +
                                " keys; the limit is " + std::to_string(limits_.max_keys_per_wait));
  }
  for (const std::string& key : keys) RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  return Status::Ok();
}

Status EtcdJobStore::StartWatching(const std::string& job_id) {
  const std::string watched = watch_scope_ == WatchScope::kEachJob ? job_id : std::string();
  if (watches_.count(watched) > 0) return Status::Ok();
  if (watch_scope_ == WatchScope::kEachJob && watches_.size() >= kMostWatchedJobs) {
    return ResourceExhaustedError("this server watches the keys of " +
                                  std::to_string(watches_.size()) +
                                  " jobs, its limit; wait at the job's own server");
  }
  // From the revision after now: a key set later is seen by the watch, a key set earlier by
  // the read every wait makes after it registers.
  ASSIGN_OR_RETURN(TxnOutcome now, client_.Txn(pb::TxnRequest()));
  Watch& watch = watches_[watched];
  watch.stop = std::make_unique<EtcdClient::WatchStop>();
  const std::string keys = watched.empty() ? prefix_ + "jobs/" : JobPrefix(watched);
  watch.thread = std::thread([this, stop = watch.stop.get(), keys, from = now.revision + 1] {
    (void)client_.WatchPrefix(
        keys, from,
        [this](const KeyChange& change) {
          if (!change.deleted) Seen(change.kv.key);
        },
        *stop);
  });
  return Status::Ok();
}

Result<EtcdJobStore::WaiterId> EtcdJobStore::WaitAsync(const StoreScopeKey& scope,
                                                       const std::vector<std::string>& keys,
                                                       std::function<void()> on_ready) {
  RETURN_IF_ERROR(CheckWait(scope, keys));
  WaiterId id = 0;
  pb::TxnRequest read;
  {
    MutexLock lock(mu_);
    Waiter waiter{.job_id = scope.job_id, .on_ready = std::move(on_ready)};
    for (const std::string& key : keys) waiter.missing.insert(EtcdKeyOf(scope, key));
    RETURN_IF_ERROR(waited_keys_.Reserve(scope.job_id, waiter.missing.size()));
    if (Status watching = StartWatching(scope.job_id); !watching.ok()) {
      waited_keys_.Release(scope.job_id, waiter.missing.size());
      return watching;
    }
    id = next_waiter_id_++;
    for (const std::string& etcd_key : waiter.missing) {
      waiters_by_key_[etcd_key].insert(id);
      read.add_success()->mutable_request_range()->set_key(etcd_key);
    }
    waiters_.emplace(id, std::move(waiter));
  }
  // Registered first, read second: a key set in between is seen by one or both, never neither.
  auto present = client_.Txn(read);
  if (!present.ok()) {
    CancelWait(id);
    return present.status();
  }
  for (const pb::ResponseOp& op : present->responses) {
    for (const pb::KeyValue& kv : op.response_range().kvs()) Seen(kv.key());
  }
  return id;
}

void EtcdJobStore::Seen(const std::string& etcd_key) {
  std::vector<std::function<void()>> ready;
  {
    MutexLock lock(mu_);
    auto waiting = waiters_by_key_.find(etcd_key);
    if (waiting == waiters_by_key_.end()) return;
    for (WaiterId id : waiting->second) {
      auto waiter = waiters_.find(id);
      waiter->second.missing.erase(etcd_key);
      waited_keys_.Release(waiter->second.job_id, 1);
      if (waiter->second.missing.empty()) {
        ready.push_back(std::move(waiter->second.on_ready));
        waiters_.erase(waiter);
      }
    }
    waiters_by_key_.erase(waiting);
  }
  for (auto& callback : ready) callback();
}

bool EtcdJobStore::CancelWait(WaiterId id) {
  MutexLock lock(mu_);
  auto waiter = waiters_.find(id);
  if (waiter == waiters_.end()) return false;
  waited_keys_.Release(waiter->second.job_id, waiter->second.missing.size());
  for (const std::string& key : waiter->second.missing) {
    auto waiting = waiters_by_key_.find(key);
    waiting->second.erase(id);
    if (waiting->second.empty()) waiters_by_key_.erase(waiting);
  }
  waiters_.erase(waiter);
  return true;
}

size_t EtcdJobStore::pending_waiters() const {
  MutexLock lock(mu_);
  return waiters_.size();
}

Status EtcdJobStore::DropJob(const std::string& job_id) {
  Watch ending;  // the job's own watch, with kEachJob: joined with mu_ not held, then freed
  {
    MutexLock lock(mu_);
    if (auto watch = watches_.find(job_id);
        watch_scope_ == WatchScope::kEachJob && watch != watches_.end()) {
      watch->second.stop->Stop();
      ending = std::move(watch->second);
      watches_.erase(watch);
    }
  }
  if (ending.thread.joinable()) ending.thread.join();
  return client_.DeletePrefix(JobPrefix(job_id)).status();
}

}  // namespace ddprun::etcd
