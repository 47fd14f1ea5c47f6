// `ddprun status --rdzv_endpoint=HOST:PORT [--rdzv_id=JOB] [--json]`: what a rendezvous server
// knows of its jobs: state, round, restarts, last failure, and each node (host, group rank,
// ranks, last heartbeat). A table for people by default; JSON for programs.
#pragma once

#include <string>
#include <vector>

#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

// `args` after "status". Returns the exit status: 0, 1 when the server cannot answer, 2 for
// usage errors.
int StatusMain(const std::vector<std::string>& args);

std::string FormatJobsTable(const std::vector<JobSnapshot>& jobs);

}  // namespace ddprun
