// The JSON view of a rendezvous server's jobs (proto/ddprun/v1/status_view.proto): what
// `ddprun status --json` prints and what the daemon's live page reads from /api/jobs, one
// document for both, so that the page shows a caller nothing `ddprun status` would not.
#pragma once

#include <string>
#include <vector>

#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

// "running" (a member of the running round), "succeeded" (its workers exited 0) or "waiting".
std::string NodeStateName(const JobSnapshot& job, const NodeSnapshot& node);

// The jobs as JSON, every field present (a 0 or an empty string is written, not dropped).
std::string JobsAsStatusJson(const std::vector<JobSnapshot>& jobs);

}  // namespace ddprun
