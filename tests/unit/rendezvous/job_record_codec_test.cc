// A job's record as bytes (job_record_codec.h): what is encoded decodes the same, a record of
// too many members leaves them out, and bytes that are not a record are refused.
#include "job_record_codec.h"

#include <catch2/catch.hpp>

using namespace ddprun;

TEST_CASE("a job record decodes as it was encoded, and garbage is refused") {
  JobRounds::Record record;
  record.state = JobRounds::State::kRunning;
  record.round = 7;
  record.restarts_used = 3;
  record.members = {"node-a", "", "node-c"};
  auto decoded = DecodeJobRecord(EncodeJobRecord(record));
  REQUIRE(decoded.ok());
  CHECK(decoded->state == JobRounds::State::kRunning);
  CHECK(decoded->round == 7);
  CHECK(decoded->restarts_used == 3);
  CHECK(decoded->members == record.members);

  record.members.assign(20'000, std::string(40, 'n'));  // 800 KiB of node ids
  const std::string big = EncodeJobRecord(record);
  CHECK(big.size() < kMostRecordBytes);
  CHECK(DecodeJobRecord(big)->members.empty());

  auto garbage = DecodeJobRecord("\xff\xff\xff not a record");
  CHECK(garbage.status().code() == StatusCode::kInvalidArgument);
}
