// What a host's daemon is asked to run for a job submitted with --hosts: its StartJobRequest.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "ddprun/v1/jobs.pb.h"
#include "submit_request.h"

namespace ddprun {

// How long a daemon has to answer a start.
inline constexpr std::chrono::seconds kStartTimeout{10};

// The request that starts (or, with check_only, checks) the job's node agent on hosts[host];
// `hosts` are the job's hosts as that daemon records them (those that run it).
v1::StartJobRequest StartRequestFor(const SubmitRequest& request,
                                    const std::vector<std::string>& hosts, size_t host,
                                    bool check_only);

}  // namespace ddprun
