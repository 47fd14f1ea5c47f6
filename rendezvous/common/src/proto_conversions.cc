// Conversions between the plain types and the protocol's messages; see proto_conversions.h.
#include "ddprun/rendezvous/proto_conversions.h"

#include <algorithm>

namespace ddprun {

void ToProto(const WorkerFailure& failure, v1::WorkerFailure& out) {
  out.set_host(failure.host);
  out.set_global_rank(failure.global_rank);
  out.set_local_rank(failure.local_rank);
  out.set_pid(failure.pid);
  if (!failure.spawn_error.empty()) {
    out.set_spawn_error(failure.spawn_error);
  } else if (!failure.hang.empty()) {
    out.set_hang(failure.hang);
  } else if (failure.term_signal) {
    out.set_term_signal(*failure.term_signal);
  } else if (failure.exit_code) {
    out.set_exit_code(*failure.exit_code);
  }
  out.set_time_unix_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(failure.time.time_since_epoch())
          .count());
  out.set_error_file(failure.error_file);
}

WorkerFailure FromProto(const v1::WorkerFailure& failure) {
  WorkerFailure out;
  out.host = failure.host();
  out.global_rank = failure.global_rank();
  out.local_rank = failure.local_rank();
  out.pid = failure.pid();
  switch (failure.ending_case()) {
    case v1::WorkerFailure::kExitCode:
      out.exit_code = failure.exit_code();
      break;
    case v1::WorkerFailure::kTermSignal:
      out.term_signal = failure.term_signal();
      break;
    case v1::WorkerFailure::kSpawnError:
      out.spawn_error = failure.spawn_error();
      break;
    case v1::WorkerFailure::kHang:
      out.hang = failure.hang();
      break;
    case v1::WorkerFailure::ENDING_NOT_SET:
      break;
  }
  out.time =
      std::chrono::system_clock::time_point(std::chrono::milliseconds(failure.time_unix_ms()));
  out.error_file = failure.error_file();
  return out;
}

void ToProto(const RendezvousSettings& settings, v1::JobSettings& out) {
  out.set_min_nodes(settings.min_nodes);
  out.set_max_nodes(settings.max_nodes);
  out.set_max_restarts(settings.max_restarts);
  out.set_join_timeout_ms(settings.join_timeout.count());
  out.set_last_call_timeout_ms(settings.last_call_timeout.count());
  out.set_heartbeat_timeout_ms(settings.heartbeat_timeout.count());
  out.set_hang_timeout_ms(settings.hang.timeout.count());
  out.set_hang_first_timeout_ms(settings.hang.first_timeout.count());
  out.set_hang_action(HangActionName(settings.hang.action));
  out.set_straggler_ratio(settings.hang.straggler_ratio);
}

RendezvousSettings FromProto(const v1::JobSettings& settings) {
  RendezvousSettings out;
  out.min_nodes = settings.min_nodes();
  out.max_nodes = settings.max_nodes();
  out.max_restarts = settings.max_restarts();
  // 0: the default. Any other value is kept, for ValidateRendezvousSettings to refuse what makes
  // no sense (a negative timeout), rather than be quietly replaced.
  if (settings.join_timeout_ms() != 0) {
    out.join_timeout = std::chrono::milliseconds(settings.join_timeout_ms());
  }
  if (settings.last_call_timeout_ms() != 0) {
    out.last_call_timeout = std::chrono::milliseconds(settings.last_call_timeout_ms());
  }
  if (settings.heartbeat_timeout_ms() != 0) {
    out.heartbeat_timeout = std::chrono::milliseconds(settings.heartbeat_timeout_ms());
  }
  out.hang.timeout = std::chrono::milliseconds(settings.hang_timeout_ms());
  out.hang.first_timeout = std::chrono::milliseconds(settings.hang_first_timeout_ms());
  out.hang.action =
      ParseHangAction(settings.hang_action()).value_or(HangSettings::Action::kRestart);
  out.hang.straggler_ratio = settings.straggler_ratio();
  return out;
}

void ToProto(const RankProgress& rank, v1::RankProgress& out) {
  out.set_global_rank(rank.global_rank);
  out.set_local_rank(rank.local_rank);
  out.set_host(rank.host);
  out.set_step(rank.step);
  out.set_collectives(rank.collectives);
  out.set_in_collective(rank.in_collective);
  out.set_progressed(rank.progressed);
  out.set_idle_ms(rank.idle.count());
  out.set_step_time_us(rank.step_time.count());
  out.set_straggler(rank.straggler);
  out.set_hung(rank.hung);
  out.set_finished(rank.finished);
}

RankProgress FromProto(const v1::RankProgress& rank) {
  RankProgress out;
  out.global_rank = rank.global_rank();
  out.local_rank = rank.local_rank();
  out.host = rank.host();
  out.step = rank.step();
  out.collectives = rank.collectives();
  out.in_collective = rank.in_collective();
  out.progressed = rank.progressed();
  out.idle = std::chrono::milliseconds(std::max<int64_t>(0, rank.idle_ms()));
  out.step_time = std::chrono::microseconds(std::max<int64_t>(0, rank.step_time_us()));
  out.straggler = rank.straggler();
  out.hung = rank.hung();
  out.finished = rank.finished();
  return out;
}

void ToProto(const NodeDescription& node, v1::NodeDescription& out) {
  out.set_node_id(node.node_id);
  out.set_host(node.host);
  out.set_nproc(node.nproc);
  out.set_master_port(node.master_port);
  out.set_has_requested_group_rank(node.requested_group_rank >= 0);
  out.set_requested_group_rank(node.requested_group_rank);
  out.set_scheduler(node.scheduler);
}

NodeDescription FromProto(const v1::NodeDescription& node) {
  return {node.node_id(),
          node.host(),
          node.nproc(),
          node.master_port(),
          node.has_requested_group_rank() ? node.requested_group_rank() : -1,
          node.scheduler()};
}

void ToProto(const RunningRound& round, v1::AgentMessage::RunningRound& out) {
  out.set_round(round.round);
  out.set_group_rank(round.group_rank);
  out.set_group_world_size(round.group_world_size);
  out.set_restart_count(round.restart_count);
  out.set_store_credential(round.store_credential);
  out.set_server_silent_ms(round.server_silent.count());
}

RunningRound FromProto(const v1::AgentMessage::RunningRound& round) {
  return {round.round(),
          round.group_rank(),
          round.group_world_size(),
          round.restart_count(),
          round.store_credential(),
          std::chrono::milliseconds(std::max<int64_t>(0, round.server_silent_ms()))};
}

v1::ServerEvent ToProto(const NodeEvent& event) {
  v1::ServerEvent proto;
  switch (event.type) {
    case NodeEvent::Type::kRoundReady: {
      const NodeAssignment& a = event.assignment;
      auto* ready = proto.mutable_round_ready();
      ready->set_round(a.round);
      ready->set_group_rank(a.group_rank);
      ready->set_group_world_size(a.group_world_size);
      ready->set_first_global_rank(a.first_global_rank);
      ready->set_world_size(a.world_size);
      ready->set_master_addr(a.master_addr);
      ready->set_master_port(a.master_port);
      ready->set_restart_count(a.restart_count);
      ready->set_store_credential(a.store_credential);
      break;
    }
    case NodeEvent::Type::kRestart:
      proto.mutable_restart()->set_reason(event.reason);
      if (event.failure) ToProto(*event.failure, *proto.mutable_restart()->mutable_failure());
      break;
    case NodeEvent::Type::kJobComplete:
      proto.mutable_job_complete();
      break;
    case NodeEvent::Type::kJobFailed:
      proto.mutable_job_failed()->set_reason(event.reason);
      proto.mutable_job_failed()->set_exit_status(event.exit_status);
      if (event.failure) {
        ToProto(*event.failure, *proto.mutable_job_failed()->mutable_root_cause());
      }
      break;
    case NodeEvent::Type::kHang:
      proto.mutable_hang()->set_description(event.hang.description);
      for (const RankProgress& rank : event.hang.hung) {
        ToProto(rank, *proto.mutable_hang()->add_hung());
      }
      break;
    case NodeEvent::Type::kStraggler: {
      auto* straggler = proto.mutable_straggler();
      straggler->set_description(event.straggler.description);
      ToProto(event.straggler.rank, *straggler->mutable_rank());
      straggler->set_recovered(event.straggler.recovered);
      straggler->set_median_us(event.straggler.median.count());
      break;
    }
  }
  return proto;
}

NodeEvent FromProto(const v1::ServerEvent& proto) {
  NodeEvent event{"", NodeEvent::Type::kRestart, {}, "", 1, std::nullopt, {}, {}};
  switch (proto.kind_case()) {
    case v1::ServerEvent::kRoundReady: {
      const auto& ready = proto.round_ready();
      event.type = NodeEvent::Type::kRoundReady;
      event.assignment = {ready.round(),
                          ready.group_rank(),
                          ready.group_world_size(),
                          ready.first_global_rank(),
                          ready.world_size(),
                          ready.master_addr(),
                          ready.master_port(),
                          ready.restart_count(),
                          ready.store_credential()};
      break;
    }
    case v1::ServerEvent::kRestart:
      event.reason = proto.restart().reason();
      if (proto.restart().has_failure()) event.failure = FromProto(proto.restart().failure());
      break;
    case v1::ServerEvent::kJobComplete:
      event.type = NodeEvent::Type::kJobComplete;
      break;
    case v1::ServerEvent::kJobFailed:
      event.type = NodeEvent::Type::kJobFailed;
      event.reason = proto.job_failed().reason();
      event.exit_status = proto.job_failed().exit_status();
      if (proto.job_failed().has_root_cause()) {
        event.failure = FromProto(proto.job_failed().root_cause());
      }
      break;
    case v1::ServerEvent::kHang:
      event.type = NodeEvent::Type::kHang;
      event.hang.description = proto.hang().description();
      for (const auto& rank : proto.hang().hung()) event.hang.hung.push_back(FromProto(rank));
      break;
    case v1::ServerEvent::kStraggler: {
      const auto& straggler = proto.straggler();
      event.type = NodeEvent::Type::kStraggler;
      event.straggler = {FromProto(straggler.rank()), straggler.recovered(),
                         std::chrono::microseconds(straggler.median_us()), straggler.description()};
      break;
    }
    case v1::ServerEvent::KIND_NOT_SET:
      event.reason = "the rendezvous server sent an empty event";
      break;
  }
  return event;
}

void ToProto(const JobSnapshot& job, v1::JobStatus& out) {
  out.set_job_id(job.job_id);
  out.set_state(job.state);
  out.set_round(job.round);
  out.set_min_nodes(job.settings.min_nodes);
  out.set_max_nodes(job.settings.max_nodes);
  out.set_restarts_used(job.restarts_used);
  out.set_max_restarts(job.settings.max_restarts);
  out.set_last_failure(job.last_failure);
  out.set_hangs(job.counters.hangs);
  out.set_stragglers(job.counters.stragglers);
  out.set_nodes_lost(job.counters.nodes_lost);
  out.set_hang_timeout_ms(
      std::chrono::duration_cast<std::chrono::milliseconds>(job.settings.hang.timeout).count());
  if (job.last_worker_failure)
    ToProto(*job.last_worker_failure, *out.mutable_last_worker_failure());
  for (const NodeSnapshot& node : job.nodes) {
    auto* node_out = out.add_nodes();
    node_out->set_node_id(node.description.node_id);
    node_out->set_host(node.description.host);
    node_out->set_group_rank(node.group_rank);
    node_out->set_first_global_rank(node.first_global_rank);
    node_out->set_nproc(node.description.nproc);
    node_out->set_heartbeat_age_ms(node.heartbeat_age.count());
    const bool running = node.group_rank >= 0 && job.state == "running";
    node_out->set_state(node.succeeded ? "succeeded" : running ? "running" : "waiting");
    for (const RankProgress& rank : node.progress) ToProto(rank, *node_out->add_progress());
    node_out->set_scheduler(node.description.scheduler);
  }
}

JobSnapshot FromProto(const v1::JobStatus& proto) {
  JobSnapshot job;
  job.job_id = proto.job_id();
  job.state = proto.state();
  job.round = proto.round();
  job.settings.min_nodes = proto.min_nodes();
  job.settings.max_nodes = proto.max_nodes();
  job.settings.max_restarts = proto.max_restarts();
  job.restarts_used = proto.restarts_used();
  job.last_failure = proto.last_failure();
  job.counters.hangs = proto.hangs();
  job.counters.stragglers = proto.stragglers();
  job.counters.nodes_lost = proto.nodes_lost();
  job.settings.hang.timeout = std::chrono::milliseconds(proto.hang_timeout_ms());
  if (proto.has_last_worker_failure())
    job.last_worker_failure = FromProto(proto.last_worker_failure());
  for (const auto& node : proto.nodes()) {
    NodeSnapshot snapshot;
    snapshot.description = {node.node_id(), node.host(), node.nproc(), 0, -1, node.scheduler()};
    snapshot.group_rank = node.group_rank();
    snapshot.first_global_rank = node.first_global_rank();
    snapshot.heartbeat_age = std::chrono::milliseconds(node.heartbeat_age_ms());
    snapshot.succeeded = node.state() == "succeeded";
    for (const auto& rank : node.progress()) snapshot.progress.push_back(FromProto(rank));
    job.nodes.push_back(std::move(snapshot));
  }
  return job;
}

}  // namespace ddprun
