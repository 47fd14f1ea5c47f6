// InMemoryStore; see in_memory_store.h.
#include "ddp/in_memory_store.h"

#include "ddprun/base/status_macros.h"
#include "ddprun/base/store_add.h"

namespace ddp {

ddprun::Status InMemoryStore::Set(const std::string& key, const std::string& value) {
  {
    ddprun::MutexLock lock(mu_);
    entries_[key] = value;
  }
  changed_.notify_all();
  return ddprun::Status::Ok();
}

ddprun::Result<std::string> InMemoryStore::Get(const std::string& key) {
  ddprun::MutexLock lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return ddprun::NotFoundError("store key '" + key + "' is not set");
  return it->second;
}

ddprun::Status InMemoryStore::Wait(const std::vector<std::string>& keys,
                                   std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  ddprun::MutexLock lock(mu_);
  auto all_set = [&]() REQUIRES(mu_) {
    for (const auto& key : keys) {
      if (!entries_.contains(key)) return false;
    }
    return true;
  };
  while (!all_set()) {
    if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && !all_set()) {
      return ddprun::DeadlineExceededError(
          "waited " + std::to_string(timeout.count()) + " ms for " + std::to_string(keys.size()) +
          " store key(s), the first '" + (keys.empty() ? "" : keys.front()) + "'");
    }
  }
  return ddprun::Status::Ok();
}

ddprun::Result<int64_t> InMemoryStore::Add(const std::string& key, int64_t delta) {
  int64_t sum = 0;
  {
    ddprun::MutexLock lock(mu_);
    auto it = entries_.find(key);
    ASSIGN_OR_RETURN(
        sum, ddprun::AddToStoredInteger(it == entries_.end() ? nullptr : &it->second, delta, key));
    entries_[key] = std::to_string(sum);
  }
  changed_.notify_all();
  return sum;
}

ddprun::Result<bool> InMemoryStore::Delete(const std::string& key) {
  ddprun::MutexLock lock(mu_);
  return entries_.erase(key) > 0;
}

}  // namespace ddp
