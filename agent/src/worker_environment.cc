// BuildWorkerEnvironment; see worker_environment.h.
#include "ddprun/agent/worker_environment.h"

#include <vector>

#include "ddprun/base/parsing.h"
#include "ddprun/base/worker_environment_contract.h"

namespace ddprun {
namespace {

// The local-rank-th entry of a CUDA_VISIBLE_DEVICES list, or the local rank when the list is
// missing or shorter.
std::string OwnDevice(const EnvironmentMap& inherited, int local_rank) {
  auto it = inherited.find(worker_env::kCudaVisibleDevices.name);
  if (it != inherited.end()) {
    const std::vector<std::string> devices = SplitCommas(it->second);
    if (local_rank < static_cast<int>(devices.size())) return devices[local_rank];
  }
  return std::to_string(local_rank);
}

}  // namespace

EnvironmentMap BuildWorkerEnvironment(const EnvironmentMap& inherited, const JobEnvironment& job,
                                      const WorkerPlacement& placement,
                                      const std::string& error_file) {
  namespace contract = worker_env;
  EnvironmentMap env = inherited;
  auto set = [&env](const contract::Variable& variable, const auto& value) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) {
      env[variable.name] = std::to_string(value);
    } else {
      env[variable.name] = value;
    }
  };
  auto set_unless_inherited = [&](const contract::Variable& variable, const std::string& value) {
    if (!env.contains(variable.name)) set(variable, value);
  };
  if (job.virtual_local_rank) {
    set(contract::kLocalRank, 0);
    set(contract::kCudaVisibleDevices, OwnDevice(inherited, placement.local_rank));
  } else {
    set(contract::kLocalRank, placement.local_rank);
  }
  set(contract::kRank, placement.global_rank);
  set(contract::kGroupRank, placement.group_rank);
  set(contract::kRoleRank, placement.global_rank);
  set(contract::kRoleName, job.role);
  set(contract::kLocalWorldSize, placement.local_world_size);
  set(contract::kWorldSize, placement.world_size);
  set(contract::kGroupWorldSize, placement.group_world_size);
  set(contract::kRoleWorldSize, placement.world_size);
  set(contract::kMasterAddr, job.master_addr);
  set(contract::kMasterPort, job.master_port);
  set(contract::kRestartCount, job.restart_count);
  set(contract::kMaxRestarts, job.max_restarts);
  set(contract::kRunId, job.run_id);
  set(contract::kErrorFile, error_file);
  // Where the agent serves PyTorch's store (one node), every rank is its client; elsewhere rank 0
  // of a PyTorch job creates its own on MASTER_PORT, which ddprun reserved for it.
  set(contract::kUseAgentStore, std::string(job.agent_store ? "True" : "False"));
  // What --signals_to_handle means to ddprun, whatever subset it named: the signals every agent
  // forwards (torchrun 2.x sets the flag's value, by default these four).
  set(contract::kSignalsToHandle, std::string("SIGTERM,SIGINT,SIGHUP,SIGQUIT"));
  set_unless_inherited(contract::kNcclAsyncErrorHandling, "1");
  set_unless_inherited(contract::kLegacyNcclAsyncErrorHandling, "1");
  if (!job.node_interface.empty()) {
    set_unless_inherited(contract::kGlooSocketIfname, job.node_interface);
  }
  if (placement.local_world_size > 1) set_unless_inherited(contract::kOmpNumThreads, "1");
  set(contract::kStoreAddr, job.store_address);
  set(contract::kToken, job.store_token);
  // TLS to the store: the files the agent was given, for the worker's store client to read.
  const std::pair<const contract::Variable*, const std::string*> tls_files[] = {
      {&contract::kTlsCa, &job.store_tls.ca_file},
      {&contract::kTlsCert, &job.store_tls.cert_file},
      {&contract::kTlsKey, &job.store_tls.key_file}};
  for (const auto& [variable, file] : tls_files) {
    if (!file->empty()) set(*variable, *file);
  }
  set(contract::kNodeAddr, job.node_address);
  set(contract::kJobId, job.run_id);
  set(contract::kRound, job.round);
  return env;
}

}  // namespace ddprun
