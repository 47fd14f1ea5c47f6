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

// The same of several servers at once (daemons on one etcd, each holding the jobs it leads):
// each job once, as the first server in `addresses` that holds it shows it. An error only when
// no server answered (the first server's, and how many more failed), or, with `job_id`, when
// none holds it (NOT_FOUND).
Result<std::vector<JobSnapshot>> FetchJobStatusFromEach(const std::vector<std::string>& addresses,
                                                        const ClientSecurity& security,
                                                        const std::string& job_id,
                                                        std::chrono::milliseconds timeout);

}  // namespace ddprun
