// EncodeJobRecord and DecodeJobRecord; see job_record_codec.h.
#include "job_record_codec.h"

#include "ddprun/v1/job_record.pb.h"

namespace ddprun {
namespace {

v1::JobRecord::State ToProto(JobRounds::State state) {
  switch (state) {
    case JobRounds::State::kForming:
      return v1::JobRecord::FORMING;
    case JobRounds::State::kRunning:
      return v1::JobRecord::RUNNING;
    case JobRounds::State::kComplete:
      return v1::JobRecord::COMPLETE;
    case JobRounds::State::kFailed:
      return v1::JobRecord::FAILED;
  }
  return v1::JobRecord::FORMING;
}

}  // namespace

std::string EncodeJobRecord(const JobRounds::Record& record) {
  v1::JobRecord message;
  message.set_state(ToProto(record.state));
  message.set_round(record.round);
  message.set_restarts_used(record.restarts_used);
  message.set_end_reason(record.end_reason);
  for (const std::string& member : record.members) message.add_members(member);
  if (message.ByteSizeLong() > kMostRecordBytes) message.clear_members();
  return message.SerializeAsString();
}

Result<JobRounds::Record> DecodeJobRecord(std::string_view bytes) {
  v1::JobRecord message;
  if (!message.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return InvalidArgumentError("a job record of " + std::to_string(bytes.size()) +
                                " bytes that is not one");
  }
  JobRounds::Record record;
  switch (message.state()) {
    case v1::JobRecord::RUNNING:
      record.state = JobRounds::State::kRunning;
      break;
    case v1::JobRecord::COMPLETE:
      record.state = JobRounds::State::kComplete;
      break;
    case v1::JobRecord::FAILED:
      record.state = JobRounds::State::kFailed;
      break;
    default:
      record.state = JobRounds::State::kForming;
      break;
  }
  if (message.round() < 0 || message.restarts_used() < 0) {
    return InvalidArgumentError("a job record with a negative round or restart count");
  }
  record.round = message.round();
  record.restarts_used = message.restarts_used();
  record.members.assign(message.members().begin(), message.members().end());
  record.end_reason = message.end_reason();
  return record;
}

}  // namespace ddprun
