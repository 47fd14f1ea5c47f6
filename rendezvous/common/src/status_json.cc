// JobsAsStatusJson; see status_json.h.
#include "ddprun/rendezvous/status_json.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <tuple>

#include "ddprun/v1/status_view.pb.h"

namespace ddprun {

std::string NodeStateName(const JobSnapshot& job, const NodeSnapshot& node) {
  if (node.succeeded) return "succeeded";
  if (node.group_rank >= 0 && job.state == "running") return "running";
  return "waiting";
}

namespace {

// The ranks of `job` the page is sent, as {node index, rank index} pairs: every one, or, past
// kMaxPageRanks, the hung, the stragglers and the kLaggards with the lowest steps.
std::set<std::pair<size_t, size_t>> RanksShown(const JobSnapshot& job, bool abridge,
                                               size_t reporting) {
  std::set<std::pair<size_t, size_t>> shown;
  std::vector<std::tuple<int64_t, int, size_t, size_t>> by_step;  // step, global rank, where
  for (size_t n = 0; n < job.nodes.size(); ++n) {
    for (size_t r = 0; r < job.nodes[n].progress.size(); ++r) {
      const RankProgress& rank = job.nodes[n].progress[r];
      if (!abridge || reporting <= PageAbridgement::kMaxPageRanks) {
        shown.emplace(n, r);
      } else if (rank.hung || rank.straggler) {
        if (shown.size() < PageAbridgement::kMaxPageRanks) shown.emplace(n, r);
      } else {
        by_step.emplace_back(rank.step, rank.global_rank, n, r);
      }
    }
  }
  const size_t laggards = std::min(by_step.size(), PageAbridgement::kLaggards);
  std::partial_sort(by_step.begin(), by_step.begin() + static_cast<std::ptrdiff_t>(laggards),
                    by_step.end());
  for (size_t i = 0; i < laggards && shown.size() < PageAbridgement::kMaxPageRanks; ++i) {
    shown.emplace(std::get<2>(by_step[i]), std::get<3>(by_step[i]));
  }
  return shown;
}

void FillRank(const RankProgress& rank, v1::RankView& rank_out) {
  rank_out.set_global_rank(rank.global_rank);
  rank_out.set_local_rank(rank.local_rank);
  rank_out.set_step(static_cast<int32_t>(std::clamp<int64_t>(rank.step, -1, INT32_MAX)));
  rank_out.set_collectives(static_cast<int32_t>(std::min<uint64_t>(rank.collectives, INT32_MAX)));
  rank_out.set_in_collective(rank.in_collective);
  rank_out.set_progressed(rank.progressed);
  rank_out.set_last_progress_age_ms(
      static_cast<int32_t>(std::min<int64_t>(rank.idle.count(), INT32_MAX)));
  rank_out.set_step_time_us(
      static_cast<int32_t>(std::min<int64_t>(rank.step_time.count(), INT32_MAX)));
  rank_out.set_straggler(rank.straggler);
  rank_out.set_hung(rank.hung);
  rank_out.set_finished(rank.finished);
}

void FillNode(const JobSnapshot& job, const NodeSnapshot& node, v1::NodeView& node_out) {
  node_out.set_node_id(node.description.node_id);
  node_out.set_host(node.description.host);
  node_out.set_group_rank(node.group_rank);
  if (node.group_rank >= 0) node_out.set_first_global_rank(node.first_global_rank);
  node_out.set_nproc(node.description.nproc);
  node_out.set_heartbeat_age_ms(static_cast<int32_t>(node.heartbeat_age.count()));
  node_out.set_state(NodeStateName(job, node));
  node_out.set_scheduler(node.description.scheduler);
}

void FillJob(const JobSnapshot& job, const std::optional<PageAbridgement>& abridgement,
             v1::JobView& out) {
  out.set_job_id(job.job_id);
  out.set_state(job.state);
  out.set_round(static_cast<int32_t>(job.round));
  out.set_min_nodes(job.settings.min_nodes);
  out.set_max_nodes(job.settings.max_nodes);
  out.set_restarts_used(job.restarts_used);
  out.set_max_restarts(job.settings.max_restarts);
  out.set_last_failure(job.last_failure);
  out.set_hangs(static_cast<int32_t>(job.counters.hangs));
  out.set_stragglers(static_cast<int32_t>(job.counters.stragglers));
  out.set_nodes_lost(static_cast<int32_t>(job.counters.nodes_lost));
  out.set_hang_timeout_ms(static_cast<int32_t>(std::min<int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(job.settings.hang.timeout).count(),
      INT32_MAX)));
  size_t workers = 0, reporting = 0;
  for (const NodeSnapshot& node : job.nodes) {
    workers += static_cast<size_t>(std::max(node.description.nproc, 0));
    reporting += node.progress.size();
  }
  out.set_node_count(static_cast<int32_t>(job.nodes.size()));
  out.set_worker_count(static_cast<int32_t>(std::min<size_t>(workers, INT32_MAX)));
  out.set_ranks_reporting(static_cast<int32_t>(std::min<size_t>(reporting, INT32_MAX)));
  if (abridgement && abridgement->shown != job.job_id) {
    out.set_abridged(!job.nodes.empty());
    return;
  }
  const std::set<std::pair<size_t, size_t>> shown =
      RanksShown(job, abridgement.has_value(), reporting);
  const bool some_left_out = shown.size() < reporting;
  out.set_abridged(some_left_out);
  for (size_t n = 0; n < job.nodes.size(); ++n) {
    const NodeSnapshot& node = job.nodes[n];
    auto first = shown.lower_bound({n, 0});
    const bool holds_shown = first != shown.end() && first->first == n;
    if (some_left_out && !holds_shown) continue;
    v1::NodeView& node_out = *out.add_nodes();
    FillNode(job, node, node_out);
    for (size_t r = 0; r < node.progress.size(); ++r) {
      if (shown.contains({n, r})) FillRank(node.progress[r], *node_out.add_ranks());
    }
  }
}

}  // namespace

std::string JobsAsStatusJson(const std::vector<JobSnapshot>& jobs,
                             const std::optional<PageAbridgement>& abridgement) {
  v1::StatusView view;
  for (const JobSnapshot& job : jobs) FillJob(job, abridgement, *view.add_jobs());
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;  // a 0 or an empty string is shown, not dropped
  options.preserve_proto_field_names = true;
  std::string text;
  if (!google::protobuf::util::MessageToJsonString(view, &text, options).ok()) {
    return "{\"error\": \"the status could not be printed as JSON\"}\n";
  }
  return text;
}

}  // namespace ddprun
