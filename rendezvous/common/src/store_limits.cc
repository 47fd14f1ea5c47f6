// The job stores' shared checks; see store_limits.h.
#include "ddprun/rendezvous/store_limits.h"

namespace ddprun {

Status CheckStoreKey(const KeyValueLimits& limits, const StoreScopeKey& scope,
                     const std::string& key) {
  if (scope.job_id.size() > limits.max_job_id_bytes) {
    return InvalidArgumentError("a job id of " + std::to_string(scope.job_id.size()) +
                                " bytes is over the limit of " +
                                std::to_string(limits.max_job_id_bytes));
  }
  if (key.empty()) return InvalidArgumentError("store key must not be empty");
  if (key.size() > limits.max_key_bytes) {
    return InvalidArgumentError("store key of " + std::to_string(key.size()) +
                                " bytes is over the limit of " +
                                std::to_string(limits.max_key_bytes));
  }
  return Status::Ok();
}

Status CheckStoreValue(const KeyValueLimits& limits, const std::string& key,
                       const std::string& value) {
  if (value.size() > limits.max_value_bytes) {
    return ResourceExhaustedError("store value of " + std::to_string(value.size()) +
                                  " bytes for key '" + key + "' is over the limit of " +
                                  std::to_string(limits.max_value_bytes));
  }
  return Status::Ok();
}

Status WaitedKeyBudget::Reserve(const std::string& job_id, size_t count) {
  const auto known = per_job_.find(job_id);
  const size_t job_waited = known == per_job_.end() ? 0 : known->second;
  if (job_waited + count > limits_.max_waited_keys_per_job) {
    return ResourceExhaustedError("job '" + job_id + "' has pending waits that miss " +
                                  std::to_string(job_waited) + " keys, and its limit is " +
                                  std::to_string(limits_.max_waited_keys_per_job) +
                                  "; wait on fewer keys at a time");
  }
  if (total_ + count > limits_.max_waited_keys) {
    return ResourceExhaustedError("the rendezvous server's pending waits already miss " +
                                  std::to_string(total_) + " keys, and its limit is " +
                                  std::to_string(limits_.max_waited_keys) +
                                  "; try again when waits have ended");
  }
  if (count == 0) return Status::Ok();
  per_job_[job_id] += count;
  total_ += count;
  return Status::Ok();
}

void WaitedKeyBudget::Release(const std::string& job_id, size_t count) {
  if (count == 0) return;
  total_ -= count;
  auto job = per_job_.find(job_id);
  job->second -= count;
  if (job->second == 0) per_job_.erase(job);
}

}  // namespace ddprun
