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

}  // namespace ddprun
