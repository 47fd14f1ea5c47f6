// ddp::Environment: what a worker learns from the environment ddprun gives it (the contract in
// the README): its ranks, sizes, restart count, and where the job's store is. The rest of the
// runtime (process group, collectives, trainer) starts from here.
#pragma once

#include <cstdint>
#include <string>

#include "ddprun/status.h"

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

  // Reads the process environment. INVALID_ARGUMENT naming the first variable that is missing
  // or malformed (for example "RANK is not set; run this program under ddprun").
  static ddprun::Result<Environment> FromProcess();
};

}  // namespace ddp
