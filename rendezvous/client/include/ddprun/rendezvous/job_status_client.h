// FetchJobStatus: what a rendezvous server knows of its jobs, for `ddprun status`.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

// Every job of the server at `address`, or only `job_id` (NOT_FOUND when it has no such job).
// Errors name the server and say what to check.
Result<std::vector<JobSnapshot>> FetchJobStatus(const std::string& address,
                                                const ClientSecurity& security,
                                                const std::string& job_id,
                                                std::chrono::milliseconds timeout);

}  // namespace ddprun
