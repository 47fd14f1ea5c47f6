// Checkpoints: atomic writes, the newest K kept, and corrupt or truncated files never loaded.
#include "ddp/checkpoint.h"

#include <zlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/child_process.h"

using namespace ddp;
using ddprun::testing::ScratchDir;

namespace {

TrainingState State(int64_t step) {
  TrainingState state;
  state.epoch = step / 10;
  state.step = step;
  state.sampler_position = step % 10;
  state.rng_state = "rng " + std::to_string(step);
  state.model = {{1.0f, 2.0f, static_cast<float>(step)}, {}};
  state.optimizer = {{0.5f}, {static_cast<float>(step)}};
  return state;
}

void FlipOneBit(const std::string& path, size_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  file.get(c);
  file.seekp(static_cast<std::streamoff>(offset));
  file.put(static_cast<char>(c ^ 0x10));
}

}  // namespace

TEST_CASE("a checkpoint reads back exactly what was written") {
  const TrainingState state = State(42);
  auto decoded = DecodeCheckpoint(EncodeCheckpoint(state));
  REQUIRE(decoded.ok());
  CHECK(decoded->step == 42);
  CHECK(decoded->epoch == 4);
  CHECK(decoded->sampler_position == 2);
  CHECK(decoded->rng_state == "rng 42");
  CHECK(decoded->model == state.model);
  CHECK(decoded->optimizer == state.optimizer);
}

TEST_CASE("the newest K checkpoints are kept, and no temporary file is left") {
  ScratchDir dir;
  CheckpointDirectory checkpoints(dir.path(), 2);
  for (int64_t step : {10, 20, 30}) REQUIRE(checkpoints.Save(State(step)).ok());
  auto files = checkpoints.List().value();
  REQUIRE(files.size() == 2);
  CHECK(files[0].find("checkpoint-000000000030.ddp") != std::string::npos);
  CHECK(files[1].find("checkpoint-000000000020.ddp") != std::string::npos);
  size_t entries = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 2);
}

TEST_CASE("a corrupted newest checkpoint is detected and skipped for the previous one") {
  const std::string how = GENERATE(as<std::string>{}, "one bit flipped", "truncated");
  INFO(how);
  ScratchDir dir;
  CheckpointDirectory checkpoints(dir.path(), 3);
  REQUIRE(checkpoints.Save(State(10)).ok());
  REQUIRE(checkpoints.Save(State(20)).ok());
  const std::string newest = checkpoints.List().value().front();
  if (how == "truncated") {
    std::filesystem::resize_file(newest, std::filesystem::file_size(newest) - 3);
  } else {
    FlipOneBit(newest, 40);
  }
  auto loaded = checkpoints.LoadNewest();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->has_value());
  CHECK((*loaded)->state.step == 10);
  REQUIRE((*loaded)->skipped.size() == 1);
  CHECK((*loaded)->skipped[0].find(newest) == 0);
  CHECK((*loaded)->skipped[0].find(how == "truncated" ? "truncated" : "checksum mismatch") !=
        std::string::npos);
}

TEST_CASE("an empty or missing directory has no checkpoint, which is not an error") {
  ScratchDir dir;
  auto none = CheckpointDirectory(dir / "missing", 2).LoadNewest();
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  CHECK(DecodeCheckpoint("garbage").status().message() == "not a ddprun checkpoint (bad magic)");
}

TEST_CASE("a checkpoint directory that cannot be read is an error naming it, not 'no checkpoint'") {
  ScratchDir dir;
  // A file where the directory should be: unreadable as a directory even for root.
  { std::ofstream(dir / "not-a-directory") << "x"; }
  CheckpointDirectory checkpoints(dir / "not-a-directory", 2);
  auto loaded = checkpoints.LoadNewest();
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.status().message().find(dir / "not-a-directory") != std::string::npos);
  CHECK_FALSE(checkpoints.List().ok());
  CHECK_FALSE(checkpoints.Save(State(10)).ok());
}

TEST_CASE("the checkpoint format is little-endian, with zlib's CRC-32 of the payload") {
  TrainingState state;
  state.epoch = 0x0102030405060708;
  state.step = -2;
  state.model = {{1.0f}};
  const std::string bytes = EncodeCheckpoint(state);
  auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes.at(i)); };
  REQUIRE(bytes.compare(0, 8, "DDPCKPT1") == 0);
  CHECK(std::vector<unsigned>{byte(8), byte(9), byte(10), byte(11)} ==
        std::vector<unsigned>{1, 0, 0, 0});  // version 1
  const size_t payload = 8 + 4 + 8;
  CHECK(byte(payload) == 0x08);  // epoch, least significant byte first
  CHECK(byte(payload + 7) == 0x01);
  CHECK(byte(payload + 8) == 0xfe);  // step -2: two's complement, little-endian
  CHECK(byte(payload + 15) == 0xff);
  // 1.0f is 0x3f800000: its last byte is the float's last in the file, before the model's
  // (empty) optimizer list count and the CRC.
  const size_t crc_at = bytes.size() - 4;
  CHECK(byte(crc_at - 8 - 1) == 0x3f);
  // The trailer is zlib's CRC-32 of the payload, little-endian.
  const uint32_t crc =
      static_cast<uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + payload),
                                  static_cast<uInt>(crc_at - payload)));
  CHECK(std::vector<unsigned>{byte(crc_at), byte(crc_at + 1), byte(crc_at + 2), byte(crc_at + 3)} ==
        std::vector<unsigned>{crc & 0xff, (crc >> 8) & 0xff, (crc >> 16) & 0xff, crc >> 24});
  CHECK(DecodeCheckpoint(bytes).ok());
}
