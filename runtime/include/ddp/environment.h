// ddp::Environment: what a worker learns from the environment ddprun gives it (the contract in
// ddprun/base/worker_environment_contract.h and docs/environment.md): its ranks, sizes, restart
// count, and where the job's store is and how to reach it safely. The rest of the runtime
// (process group, collectives, trainer) starts from here.
#pragma once

#include <cstdint>
#include <string>

#include "ddprun/base/status.h"

namespace ddp {

struct Environment {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int group_rank = 0;
  int restart_count = 0;
  std::string master_addr;
  int master_port = 0;
  std::string job_id;
  int64_t round = 0;
  std::string store_address;
  std::string store_token;
  // The TLS files the store is reached with (empty: not given): the CA that signed the server's
  // certificate, and this client's certificate and key for mutual TLS.
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;

  // Reads the process environment. INVALID_ARGUMENT naming the first variable that is missing
  // or malformed (for example "RANK is not set; run this program under ddprun").
  static ddprun::Result<Environment> FromProcess();
};

}  // namespace ddp
