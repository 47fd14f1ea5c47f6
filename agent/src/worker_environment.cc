// BuildWorkerEnvironment; see worker_environment.h.
#include "ddprun/agent/worker_environment.h"

#include <sstream>

extern char** environ;

namespace ddprun {
namespace {

// The local-rank-th entry of a CUDA_VISIBLE_DEVICES list, or the local rank when the list is
// missing or shorter.
std::string OwnDevice(const EnvironmentMap& inherited, int local_rank) {
  auto it = inherited.find("CUDA_VISIBLE_DEVICES");
  if (it != inherited.end()) {
    std::stringstream list(it->second);
    int index = 0;
    for (std::string device; std::getline(list, device, ','); ++index) {
      if (index == local_rank) return device;
    }
  }
  return std::to_string(local_rank);
}

}  // namespace

EnvironmentMap BuildWorkerEnvironment(const EnvironmentMap& inherited, const JobEnvironment& job,
                                      const WorkerPlacement& placement,
                                      const std::string& error_file) {
  EnvironmentMap env = inherited;
  auto set = [&env](const char* key, const auto& value) {
    if constexpr (std::is_arithmetic_v<std::decay_t<decltype(value)>>) {
      env[key] = std::to_string(value);
    } else {
      env[key] = value;
    }
  };
  if (job.virtual_local_rank) {
    set("LOCAL_RANK", 0);
    set("CUDA_VISIBLE_DEVICES", OwnDevice(inherited, placement.local_rank));
  } else {
    set("LOCAL_RANK", placement.local_rank);
  }
  set("RANK", placement.global_rank);
  set("GROUP_RANK", placement.group_rank);
  set("ROLE_RANK", placement.global_rank);
  set("ROLE_NAME", job.role);
  set("LOCAL_WORLD_SIZE", placement.local_world_size);
  set("WORLD_SIZE", placement.world_size);
  set("GROUP_WORLD_SIZE", placement.group_world_size);
  set("ROLE_WORLD_SIZE", placement.world_size);
  set("MASTER_ADDR", job.master_addr);
  set("MASTER_PORT", job.master_port);
  set("TORCHELASTIC_RESTART_COUNT", job.restart_count);
  set("TORCHELASTIC_MAX_RESTARTS", job.max_restarts);
  set("TORCHELASTIC_RUN_ID", job.run_id);
  set("TORCHELASTIC_ERROR_FILE", error_file);
  // ddprun hosts no TCPStore for the workers: rank 0 of a PyTorch job creates its own on
  // MASTER_PORT, which ddprun reserved for it.
  set("TORCHELASTIC_USE_AGENT_STORE", std::string("False"));
  if (!env.contains("TORCH_NCCL_ASYNC_ERROR_HANDLING")) {
    set("TORCH_NCCL_ASYNC_ERROR_HANDLING", std::string("1"));
  }
  if (!job.node_interface.empty() && !env.contains("GLOO_SOCKET_IFNAME")) {
    set("GLOO_SOCKET_IFNAME", job.node_interface);
  }
  if (placement.local_world_size > 1 && !env.contains("OMP_NUM_THREADS")) {
    set("OMP_NUM_THREADS", std::string("1"));
  }
  set("DDPRUN_STORE_ADDR", job.store_address);
  set("DDPRUN_TOKEN", job.store_token);
  // TLS to the store: the files the agent was given, for the worker's store client to read.
  const std::pair<const char*, const std::string*> tls_files[] = {
      {"DDPRUN_TLS_CA", &job.store_tls.ca_file},
      {"DDPRUN_TLS_CERT", &job.store_tls.cert_file},
      {"DDPRUN_TLS_KEY", &job.store_tls.key_file}};
  for (const auto& [name, file] : tls_files) {
    if (!file->empty()) set(name, *file);
  }
  set("DDPRUN_NODE_ADDR", job.node_address);
  set("DDPRUN_JOB_ID", job.run_id);
  set("DDPRUN_ROUND", job.round);
  return env;
}

EnvironmentMap CurrentEnvironment() {
  EnvironmentMap env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    std::string text(*entry);
    auto equals = text.find('=');
    if (equals == std::string::npos) continue;
    env.emplace(text.substr(0, equals), text.substr(equals + 1));
  }
  return env;
}

std::vector<std::string> ToEnvp(const EnvironmentMap& environment) {
  std::vector<std::string> envp;
  envp.reserve(environment.size());
  for (const auto& [key, value] : environment) envp.push_back(key + "=" + value);
  return envp;
}

}  // namespace ddprun
