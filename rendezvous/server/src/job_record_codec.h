// A job's record (JobRounds::Record) as bytes in a shared store: the protobuf message
// ddprun.v1.JobRecord (proto/ddprun/v1/job_record.proto). A record stays well inside etcd's
// request limit (1.5 MiB): past kMostRecordBytes its members are left out, and a server taking
// the job over then adopts any node that comes back with the recorded round.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "ddprun/base/status.h"
#include "job_rounds.h"

namespace ddprun {

inline constexpr size_t kMostRecordBytes = 512 << 10;

std::string EncodeJobRecord(const JobRounds::Record& record);
// INVALID_ARGUMENT when `bytes` is not a record.
Result<JobRounds::Record> DecodeJobRecord(std::string_view bytes);

}  // namespace ddprun
