// KeyValueStore; see key_value_store.h.
#include "ddprun/rendezvous/key_value_store.h"

#include <limits>

#include "ddprun/base/status_macros.h"
#include "ddprun/base/store_add.h"

namespace ddprun {
namespace {

void RunAll(std::vector<std::function<void()>>& callbacks) {
  for (auto& callback : callbacks) callback();
}

}  // namespace

Status KeyValueStore::StoreLocked(const StoreScopeKey& scope, const std::string& key,
                                  std::string value, std::vector<std::function<void()>>& ready) {
  RETURN_IF_ERROR(CheckStoreValue(limits_, key, value));
  EntryKey entry_key{scope, key};
  auto existing = entries_.find(entry_key);
  const size_t old_bytes = existing == entries_.end() ? 0 : key.size() + existing->second.size();
  const size_t new_bytes = key.size() + value.size();
  size_t& job_total = job_bytes_[scope.job_id];
  if (job_total - old_bytes + new_bytes > limits_.max_job_bytes) {
    return ResourceExhaustedError("job '" + scope.job_id + "' would hold more than " +
                                  std::to_string(limits_.max_job_bytes) +
                                  " bytes in the store; delete keys it no longer needs");
  }
  if (total_bytes_ - old_bytes + new_bytes > limits_.max_total_bytes) {
    return ResourceExhaustedError("the rendezvous server's store would hold more than " +
                                  std::to_string(limits_.max_total_bytes) +
                                  " bytes for all its jobs; try again when jobs have ended");
  }
  job_total = job_total - old_bytes + new_bytes;
  total_bytes_ = total_bytes_ - old_bytes + new_bytes;
  entries_[entry_key] = std::move(value);

  auto watched = waiters_by_key_.find(entry_key);
  if (watched == waiters_by_key_.end()) return Status::Ok();
  for (WaiterId id : watched->second) {
    auto waiter = waiters_.find(id);
    waiter->second.missing_keys.erase(key);
    waited_keys_.Release(waiter->second.scope.job_id, 1);
    if (waiter->second.missing_keys.empty()) {
      ready.push_back(std::move(waiter->second.on_ready));
      waiters_.erase(waiter);
    }
  }
  waiters_by_key_.erase(watched);
  return Status::Ok();
}

Status KeyValueStore::Set(const StoreScopeKey& scope, const std::string& key,
                          const std::string& value) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  std::vector<std::function<void()>> ready;
  Status status;
  {
    MutexLock lock(mu_);
    status = StoreLocked(scope, key, value, ready);
  }
  RunAll(ready);
  return status;
}

Result<std::string> KeyValueStore::Get(const StoreScopeKey& scope, const std::string& key) {
  MutexLock lock(mu_);
  auto it = entries_.find({scope, key});
  if (it == entries_.end()) return NotFoundError("store key '" + key + "' is not set");
  return it->second;
}

Result<int64_t> KeyValueStore::Add(const StoreScopeKey& scope, const std::string& key,
                                   int64_t delta) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  std::vector<std::function<void()>> ready;
  int64_t sum = 0;
  {
    MutexLock lock(mu_);
    auto it = entries_.find({scope, key});
    ASSIGN_OR_RETURN(sum,
                     AddToStoredInteger(it == entries_.end() ? nullptr : &it->second, delta, key));
    RETURN_IF_ERROR(StoreLocked(scope, key, std::to_string(sum), ready));
  }
  RunAll(ready);
  return sum;
}

Result<CompareSetOutcome> KeyValueStore::CompareSet(const StoreScopeKey& scope,
                                                    const std::string& key,
                                                    const std::string& expected,
                                                    const std::string& desired) {
  RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  std::vector<std::function<void()>> ready;
  CompareSetOutcome outcome;
  {
    MutexLock lock(mu_);
    auto it = entries_.find({scope, key});
    const bool matches = it == entries_.end() ? expected.empty() : it->second == expected;
    if (!matches) {
      outcome.value = it == entries_.end() ? std::string() : it->second;
      return outcome;
    }
    outcome.value = desired;
    outcome.swapped = true;
    RETURN_IF_ERROR(StoreLocked(scope, key, desired, ready));
  }
  RunAll(ready);
  return outcome;
}

Result<bool> KeyValueStore::Delete(const StoreScopeKey& scope, const std::string& key) {
  MutexLock lock(mu_);
  auto it = entries_.find({scope, key});
  if (it == entries_.end()) return false;
  job_bytes_[scope.job_id] -= key.size() + it->second.size();
  total_bytes_ -= key.size() + it->second.size();
  entries_.erase(it);
  return true;
}

Result<KeyValueStore::WaiterId> KeyValueStore::WaitAsync(const StoreScopeKey& scope,
                                                         const std::vector<std::string>& keys,
                                                         std::function<void()> on_ready) {
  if (keys.empty()) return InvalidArgumentError("wait needs at least one key");
  if (keys.size() > limits_.max_keys_per_wait) {
    return InvalidArgumentError("wait names " + std::to_string(keys.size()) +
                                " keys; the limit is " + std::to_string(limits_.max_keys_per_wait));
  }
  for (const auto& key : keys) {
    RETURN_IF_ERROR(CheckStoreKey(limits_, scope, key));
  }
  WaiterId id;
  {
    MutexLock lock(mu_);
    id = next_waiter_id_++;
    Waiter waiter{scope, {}, std::move(on_ready)};
    for (const auto& key : keys) {
      if (!entries_.contains({scope, key})) waiter.missing_keys.insert(key);
    }
    if (!waiter.missing_keys.empty()) {
      RETURN_IF_ERROR(waited_keys_.Reserve(scope.job_id, waiter.missing_keys.size()));
      for (const auto& key : waiter.missing_keys) waiters_by_key_[{scope, key}].insert(id);
      waiters_.emplace(id, std::move(waiter));
      return id;
    }
    on_ready = std::move(waiter.on_ready);
  }
  on_ready();
  return id;
}

bool KeyValueStore::CancelWait(WaiterId id) {
  MutexLock lock(mu_);
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return false;
  waited_keys_.Release(it->second.scope.job_id, it->second.missing_keys.size());
  for (const auto& key : it->second.missing_keys) {
    auto watched = waiters_by_key_.find({it->second.scope, key});
    if (watched == waiters_by_key_.end()) continue;
    watched->second.erase(id);
    if (watched->second.empty()) waiters_by_key_.erase(watched);
  }
  waiters_.erase(it);
  return true;
}

std::optional<StoreUsage> KeyValueStore::Usage() const {
  MutexLock lock(mu_);
  return StoreUsage{entries_.size(), total_bytes_};
}

size_t KeyValueStore::pending_waiters() const {
  MutexLock lock(mu_);
  return waiters_.size();
}

Status KeyValueStore::DropJob(const std::string& job_id) {
  MutexLock lock(mu_);
  auto it = entries_.lower_bound({StoreScopeKey{job_id, std::numeric_limits<int64_t>::min()}, ""});
  while (it != entries_.end() && it->first.first.job_id == job_id) it = entries_.erase(it);
  if (auto bytes = job_bytes_.find(job_id); bytes != job_bytes_.end()) {
    total_bytes_ -= bytes->second;
    job_bytes_.erase(bytes);
  }
  return Status::Ok();
}

}  // namespace ddprun
