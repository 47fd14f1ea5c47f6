// ddp::InMemoryStore: a Store held in this process's memory, for ranks that are threads of one
// process (tests, single-process experiments). It has Store's semantics exactly, including the
// errors; nothing leaves the process. Thread-safe.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "ddp/store.h"
#include "ddprun/base/thread_annotations.h"

namespace ddp {

class InMemoryStore final : public Store {
 public:
  ddprun::Status Set(const std::string& key, const std::string& value) override;
  ddprun::Result<std::string> Get(const std::string& key) override;
  ddprun::Status Wait(const std::vector<std::string>& keys,
                      std::chrono::milliseconds timeout) override;
  ddprun::Result<int64_t> Add(const std::string& key, int64_t delta) override;
  ddprun::Result<bool> Delete(const std::string& key) override;

 private:
  ddprun::Mutex mu_;
  std::condition_variable_any changed_;  // notified on every Set and Add
  std::map<std::string, std::string> entries_ GUARDED_BY(mu_);
};

}  // namespace ddp
