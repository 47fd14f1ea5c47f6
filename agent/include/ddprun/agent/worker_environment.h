// The worker environment the agent builds, by the contract's table
// (ddprun/base/worker_environment_contract.h, documented in docs/environment.md): torchrun's
// variables with torchrun's meaning, plus ddprun's own (DDPRUN_*). Pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "ddprun/base/environment_map.h"

namespace ddprun {

// Where one worker stands in the job.
struct WorkerPlacement {
  int local_rank = 0;
  int global_rank = 0;
  int group_rank = 0;  // the node's rank
  int local_world_size = 1;
  int world_size = 1;
  int group_world_size = 1;  // number of nodes
};

// Paths of PEM files (empty: not given).
struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

// What every worker of one attempt shares.
struct JobEnvironment {
  std::string role = "default";
  std::string run_id;
  std::string master_addr;
  int master_port = 0;
  int restart_count = 0;
  int max_restarts = 0;
  std::string store_address;  // the rendezvous store, "host:port"
  std::string store_token;    // DDPRUN_TOKEN: the job's store credential (NodeAssignment)
  TlsFiles store_tls;         // when the store speaks TLS
  std::string node_address = "127.0.0.1";  // where other hosts reach this node's workers
  // The network interface holding node_address (multi-node jobs), given to Gloo as
  // GLOO_SOCKET_IFNAME unless the user set that; empty: none.
  std::string node_interface;
  int64_t round = 0;
  // Whether the agent serves PyTorch's store at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True, as torchrun 2.x's does); otherwise rank 0 hosts it.
  bool agent_store = false;
  // LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES the worker's own device: the local-rank-th entry of
  // the inherited CUDA_VISIBLE_DEVICES, or the local rank itself (torchrun's
  // --virtual_local_rank).
  bool virtual_local_rank = false;
};

// The inherited environment with the contract's variables set over it. OMP_NUM_THREADS=1 is added
// when more than one worker runs on the node and `inherited` lacks it;
// TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and NCCL_ASYNC_ERROR_HANDLING=1 (the name torch < 2.2 reads),
// each when `inherited` lacks it; GLOO_SOCKET_IFNAME=node_interface
// when there is one and `inherited` lacks it.
EnvironmentMap BuildWorkerEnvironment(const EnvironmentMap& inherited, const JobEnvironment& job,
                                      const WorkerPlacement& placement,
                                      const std::string& error_file);

}  // namespace ddprun
