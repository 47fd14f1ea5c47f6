// Checkpoints; see checkpoint.h.
//
// File layout (little-endian): magic "DDPCKPT1", u32 version, u64 payload length, payload,
// u32 CRC-32 of the payload. Payload: i64 epoch, i64 step, i64 sampler_position, string rng,
// tensor list model, tensor list optimizer; a string is u64 length + bytes, a tensor list is
// u64 count + (u64 elements + float32 data) each.
#include "ddp/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ddp {
namespace {

constexpr char kMagic[8] = {'D', 'D', 'P', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kVersion = 1;
constexpr char kPrefix[] = "checkpoint-";
constexpr char kSuffix[] = ".ddp";

uint32_t Crc32(const std::string& bytes) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t crc = 0xffffffffu;
  for (unsigned char b : bytes) crc = table[(crc ^ b) & 0xff] ^ (crc >> 8);
  return crc ^ 0xffffffffu;
}

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

void PutTensors(std::string& out, const std::vector<std::vector<float>>& tensors) {
  Put<uint64_t>(out, tensors.size());
  for (const auto& t : tensors) {
    Put<uint64_t>(out, t.size());
    if (!t.empty()) out.append(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(float));
  }
}

// Reads from a byte string, failing (instead of reading past the end) on truncation.
struct Reader {
  const std::string& bytes;
  size_t at = 0;
  bool failed = false;

  template <typename T>
  T Get() {
    T value{};
    if (bytes.size() - at < sizeof(T)) {
      failed = true;
      return value;
    }
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
  }
  std::string GetString() {
    const auto size = Get<uint64_t>();
    if (failed || bytes.size() - at < size) {
      failed = true;
      return {};
    }
    std::string s = bytes.substr(at, size);
    at += size;
    return s;
  }
  std::vector<std::vector<float>> GetTensors() {
    const auto count = Get<uint64_t>();
    std::vector<std::vector<float>> tensors;
    for (uint64_t i = 0; i < count && !failed; ++i) {
      const auto elements = Get<uint64_t>();
      if (failed || (bytes.size() - at) / sizeof(float) < elements) {
        failed = true;
        break;
      }
      std::vector<float> t(elements);
      if (elements > 0) std::memcpy(t.data(), bytes.data() + at, elements * sizeof(float));
      at += elements * sizeof(float);
      tensors.push_back(std::move(t));
    }
    return tensors;
  }
};

ddprun::Status WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ddprun::ErrnoError("writing " + path, errno);
    done += static_cast<size_t>(n);
  }
  return ddprun::Status::Ok();
}

std::string FileName(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s%012lld%s", kPrefix, static_cast<long long>(step), kSuffix);
  return name;
}

}  // namespace

std::string EncodeCheckpoint(const TrainingState& state) {
  std::string payload;
  Put<int64_t>(payload, state.epoch);
  Put<int64_t>(payload, state.step);
  Put<int64_t>(payload, state.sampler_position);
  Put<uint64_t>(payload, state.rng_state.size());
  payload += state.rng_state;
  PutTensors(payload, state.model);
  PutTensors(payload, state.optimizer);
  std::string file(kMagic, sizeof(kMagic));
  Put<uint32_t>(file, kVersion);
  Put<uint64_t>(file, payload.size());
  file += payload;
  Put<uint32_t>(file, Crc32(payload));
  return file;
}

ddprun::Result<TrainingState> DecodeCheckpoint(const std::string& bytes) {
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return ddprun::InvalidArgumentError("not a ddprun checkpoint (bad magic)");
  }
  Reader header{bytes, sizeof(kMagic)};
  const auto version = header.Get<uint32_t>();
  const auto length = header.Get<uint64_t>();
  if (header.failed) return ddprun::InvalidArgumentError("truncated header");
  if (version != kVersion) {
    return ddprun::InvalidArgumentError("format version " + std::to_string(version) +
                                        ", this build reads " + std::to_string(kVersion));
  }
  if (bytes.size() - header.at < length || bytes.size() - header.at - length != sizeof(uint32_t)) {
    return ddprun::InvalidArgumentError("truncated or extended: " + std::to_string(bytes.size()) +
                                        " bytes for a payload of " + std::to_string(length));
  }
  const std::string payload = bytes.substr(header.at, length);
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + header.at + length, sizeof(stored));
  if (stored != Crc32(payload)) return ddprun::InvalidArgumentError("checksum mismatch");
  Reader in{payload};
  TrainingState state;
  state.epoch = in.Get<int64_t>();
  state.step = in.Get<int64_t>();
  state.sampler_position = in.Get<int64_t>();
  state.rng_state = in.GetString();
  state.model = in.GetTensors();
  state.optimizer = in.GetTensors();
  if (in.failed || in.at != payload.size()) {
    return ddprun::InvalidArgumentError("malformed payload");
  }
  return state;
}

CheckpointDirectory::CheckpointDirectory(std::string directory, int keep)
    : directory_(std::move(directory)), keep_(std::max(1, keep)) {}

ddprun::Status CheckpointDirectory::Save(const TrainingState& state) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error) {
    return ddprun::UnavailableError("cannot create checkpoint directory " + directory_ + ": " +
                                    error.message());
  }
  const std::string final_path = directory_ + "/" + FileName(state.step);
  const std::string temporary = final_path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ddprun::ErrnoError("creating " + temporary, errno);
  ddprun::Status written = WriteAll(fd, EncodeCheckpoint(state), temporary);
  if (written.ok() && ::fsync(fd) != 0) written = ddprun::ErrnoError("fsync " + temporary, errno);
  ::close(fd);
  if (written.ok() && std::rename(temporary.c_str(), final_path.c_str()) != 0) {
    written = ddprun::ErrnoError("renaming " + temporary, errno);
  }
  if (!written.ok()) {
    ::unlink(temporary.c_str());
    return written;
  }
  // The rename is durable only once the directory is.
  if (const int dir = ::open(directory_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  auto files = List();
  for (size_t i = static_cast<size_t>(keep_); i < files.size(); ++i) {
    std::filesystem::remove(files[i], error);
  }
  return ddprun::Status::Ok();
}

std::vector<std::string> CheckpointDirectory::List() const {
  std::vector<std::string> files;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory_, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) == 0 && name.size() > std::strlen(kSuffix) &&
        name.compare(name.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.rbegin(), files.rend());  // zero-padded steps: by name is by step
  return files;
}

ddprun::Result<std::optional<LoadedCheckpoint>> CheckpointDirectory::LoadNewest() const {
  std::error_code error;
  if (!std::filesystem::exists(directory_, error)) return std::optional<LoadedCheckpoint>();
  LoadedCheckpoint loaded;
  for (const auto& path : List()) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    auto state = DecodeCheckpoint(content.str());
    if (!state.ok()) {
      loaded.skipped.push_back(path + ": " + state.status().message());
      continue;
    }
    loaded.state = std::move(state).value();
    loaded.path = path;
    return std::optional<LoadedCheckpoint>(std::move(loaded));
  }
  return std::optional<LoadedCheckpoint>();
}

}  // namespace ddp
