// JobsAsStatusJson; see status_json.h.
#include "ddprun/rendezvous/status_json.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <cstdint>

#include "ddprun/v1/status_view.pb.h"

namespace ddprun {

std::string NodeStateName(const JobSnapshot& job, const NodeSnapshot& node) {
  if (node.succeeded) return "succeeded";
  if (node.group_rank >= 0 && job.state == "running") return "running";
  return "waiting";
}

std::string JobsAsStatusJson(const std::vector<JobSnapshot>& jobs) {
  v1::StatusView view;
  for (const JobSnapshot& job : jobs) {
    v1::JobView& out = *view.add_jobs();
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
    for (const NodeSnapshot& node : job.nodes) {
      v1::NodeView& node_out = *out.add_nodes();
      node_out.set_node_id(node.description.node_id);
      node_out.set_host(node.description.host);
      node_out.set_group_rank(node.group_rank);
      if (node.group_rank >= 0) node_out.set_first_global_rank(node.first_global_rank);
      node_out.set_nproc(node.description.nproc);
      node_out.set_heartbeat_age_ms(static_cast<int32_t>(node.heartbeat_age.count()));
      node_out.set_state(NodeStateName(job, node));
      node_out.set_scheduler(node.description.scheduler);
      for (const RankProgress& rank : node.progress) {
        v1::RankView& rank_out = *node_out.add_ranks();
        rank_out.set_global_rank(rank.global_rank);
        rank_out.set_local_rank(rank.local_rank);
        rank_out.set_step(static_cast<int32_t>(std::clamp<int64_t>(rank.step, -1, INT32_MAX)));
        rank_out.set_collectives(
            static_cast<int32_t>(std::min<uint64_t>(rank.collectives, INT32_MAX)));
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
    }
  }
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
