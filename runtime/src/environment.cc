// ddp::Environment::FromProcess; see environment.h.
#include "ddp/environment.h"

#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_environment_contract.h"

namespace ddp {
namespace {

namespace contract = ddprun::worker_env;

ddprun::Result<std::string> Required(const contract::Variable& variable) {
  auto value = contract::Lookup(variable);
  if (!value) {
    return ddprun::InvalidArgumentError(std::string(variable.name) +
                                        " is not set; run this program under ddprun");
  }
  return *value;
}

template <typename Int>
ddprun::Status RequiredInteger(const contract::Variable& variable, Int min_value, Int& out) {
  ASSIGN_OR_RETURN(const std::string text, Required(variable));
  const auto value = ddprun::ParseInteger<Int>(text, min_value);
  if (!value) {
    return ddprun::InvalidArgumentError(std::string(variable.name) +
                                        " must be an integer of at least " +
                                        std::to_string(min_value) + ", not '" + text + "'");
  }
  out = *value;
  return ddprun::Status::Ok();
}

}  // namespace

ddprun::Result<Environment> Environment::FromProcess() {
  Environment env;
  RETURN_IF_ERROR(RequiredInteger(contract::kRank, 0, env.rank));
  RETURN_IF_ERROR(RequiredInteger(contract::kWorldSize, 1, env.world_size));
  RETURN_IF_ERROR(RequiredInteger(contract::kLocalRank, 0, env.local_rank));
  RETURN_IF_ERROR(RequiredInteger(contract::kLocalWorldSize, 1, env.local_world_size));
  RETURN_IF_ERROR(RequiredInteger(contract::kGroupRank, 0, env.group_rank));
  RETURN_IF_ERROR(RequiredInteger(contract::kRestartCount, 0, env.restart_count));
  RETURN_IF_ERROR(RequiredInteger(contract::kMasterPort, 1, env.master_port));
  RETURN_IF_ERROR(RequiredInteger<int64_t>(contract::kRound, 0, env.round));
  if (env.rank >= env.world_size) {
    return ddprun::InvalidArgumentError("RANK " + std::to_string(env.rank) +
                                        " is not below WORLD_SIZE " +
                                        std::to_string(env.world_size));
  }
  ASSIGN_OR_RETURN(env.master_addr, Required(contract::kMasterAddr));
  ASSIGN_OR_RETURN(env.job_id, Required(contract::kJobId));
  ASSIGN_OR_RETURN(env.store_address, Required(contract::kStoreAddr));
  env.store_token = contract::Lookup(contract::kToken).value_or("");
  env.tls_ca_file = contract::Lookup(contract::kTlsCa).value_or("");
  env.tls_cert_file = contract::Lookup(contract::kTlsCert).value_or("");
  env.tls_key_file = contract::Lookup(contract::kTlsKey).value_or("");
  return env;
}

}  // namespace ddp
