// The JSON view of a rendezvous server's jobs (proto/ddprun/v1/status_view.proto): what
// `ddprun status --json` prints and what the daemon's live page reads from /api/jobs, one
// document for both, so that the page shows a caller nothing `ddprun status` would not.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

// "running" (a member of the running round), "succeeded" (its workers exited 0) or "waiting".
std::string NodeStateName(const JobSnapshot& job, const NodeSnapshot& node);

// What the live page's poll leaves out, so that one poll stays small however large the jobs:
// every job's nodes but those of `shown` (their counts stay in node_count, worker_count and
// ranks_reporting); and of `shown`, when more than kMaxPageRanks of its ranks report, every rank
// but the hung, the stragglers and the kLaggards furthest behind (at most kMaxPageRanks), with
// the nodes that hold none of them. Each job it shortened says `abridged`.
struct PageAbridgement {
  static constexpr size_t kMaxPageRanks = 256;  // as many lines as the page's plots can tell apart
  static constexpr size_t kLaggards = 16;
  std::string shown;  // the job the page shows
};

// The jobs as JSON, every field present (a 0 or an empty string is written, not dropped), whole,
// or abridged for the live page.
std::string JobsAsStatusJson(const std::vector<JobSnapshot>& jobs,
                             const std::optional<PageAbridgement>& abridgement = std::nullopt);

}  // namespace ddprun
