// The conversions between the rendezvous protocol's plain types (round_types.h,
// ddprun/base/worker_failure.h) and its protobuf messages (ddprun/v1/rendezvous.proto), in both
// directions, in one place: the server's service and session reactor, the agents' session
// client and the status client all convert here.
#pragma once

#include "ddprun/base/worker_failure.h"
#include "ddprun/rendezvous/round_types.h"
#include "ddprun/v1/rendezvous.pb.h"

namespace ddprun {

void ToProto(const WorkerFailure& failure, v1::WorkerFailure& out);
// A failure without an ending (an empty message) has neither exit code nor signal.
WorkerFailure FromProto(const v1::WorkerFailure& failure);

// A job's settings; a timeout of 0 in the message keeps the default.
void ToProto(const RendezvousSettings& settings, v1::JobSettings& out);
RendezvousSettings FromProto(const v1::JobSettings& settings);

void ToProto(const RankProgress& rank, v1::RankProgress& out);
RankProgress FromProto(const v1::RankProgress& rank);

void ToProto(const NodeDescription& node, v1::NodeDescription& out);
NodeDescription FromProto(const v1::NodeDescription& node);

void ToProto(const RunningRound& round, v1::AgentMessage::RunningRound& out);
RunningRound FromProto(const v1::AgentMessage::RunningRound& round);

// A round event, as the server pushes it. An empty message becomes a restart saying so.
v1::ServerEvent ToProto(const NodeEvent& event);
NodeEvent FromProto(const v1::ServerEvent& event);

// A job as `ddprun status` shows it. A node's state is derived from the job's and its own.
void ToProto(const JobSnapshot& job, v1::JobStatus& out);
JobSnapshot FromProto(const v1::JobStatus& job);

}  // namespace ddprun
