// Checkpoints; see checkpoint.h.
//
// File layout, every number little-endian whatever the host: magic "DDPCKPT1", u32 version,
// u64 payload length, payload, u32 CRC-32 (zlib's) of the payload. Payload: i64 epoch, i64 step,
// i64 sampler_position, string rng, tensor list model, tensor list optimizer; a string is u64
// length + bytes, a tensor list is u64 count + (u64 elements + float32 data) each.
#include "ddp/checkpoint.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"

namespace ddp {
namespace {

constexpr char kMagic[8] = {'D', 'D', 'P', 'C', 'K', 'P', 'T', '1'};
constexpr uint32_t kVersion = 1;
constexpr char kPrefix[] = "checkpoint-";
constexpr char kSuffix[] = ".ddp";
// Larger files are read no further and fail their length check: a bound on what a corrupt
// length field can make LoadNewest read.
constexpr size_t kMaxCheckpointBytes = size_t{64} << 30;

uint32_t Crc32(const std::string& bytes) {
  uLong crc = crc32(0L, Z_NULL, 0);
  // zlib takes at most 4 GiB per call.
  for (size_t done = 0; done < bytes.size();) {
    const size_t chunk = std::min<size_t>(bytes.size() - done, 1u << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + done), static_cast<uInt>(chunk));
    done += chunk;
  }
  return static_cast<uint32_t>(crc);
}

// An unsigned integer's bytes, least significant first.
template <typename T>
void PutLittleEndian(std::string& out, T value) {
  static_assert(std::is_unsigned_v<T>);
  for (size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
}

void PutInt64(std::string& out, int64_t value) {
  PutLittleEndian<uint64_t>(out, static_cast<uint64_t>(value));
}

void PutTensors(std::string& out, const std::vector<std::vector<float>>& tensors) {
  PutLittleEndian<uint64_t>(out, tensors.size());
  for (const auto& t : tensors) {
    PutLittleEndian<uint64_t>(out, t.size());
    if constexpr (std::endian::native == std::endian::little) {
      if (!t.empty()) out.append(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(float));
    } else {
      for (float f : t) PutLittleEndian<uint32_t>(out, std::bit_cast<uint32_t>(f));
    }
  }
}

// Reads from a byte string, failing (instead of reading past the end) on truncation.
struct Reader {
  const std::string& bytes;
  size_t at = 0;
  bool failed = false;

  // An unsigned integer stored least significant byte first.
  template <typename T>
  T Get() {
    static_assert(std::is_unsigned_v<T>);
    T value{};
    if (bytes.size() - at < sizeof(T)) {
      failed = true;
      return value;
    }
    for (size_t i = 0; i < sizeof(T); ++i) {
      value |= static_cast<T>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
    }
    at += sizeof(T);
    return value;
  }
  int64_t GetInt64() { return static_cast<int64_t>(Get<uint64_t>()); }
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
      if constexpr (std::endian::native == std::endian::little) {
        if (elements > 0) std::memcpy(t.data(), bytes.data() + at, elements * sizeof(float));
        at += elements * sizeof(float);
      } else {
        for (auto& f : t) f = std::bit_cast<float>(Get<uint32_t>());
      }
      tensors.push_back(std::move(t));
    }
    return tensors;
  }
};

std::string FileName(int64_t step) {
  char name[64];
  std::snprintf(name, sizeof(name), "%s%012lld%s", kPrefix, static_cast<long long>(step), kSuffix);
  return name;
}

}  // namespace

std::string EncodeCheckpoint(const TrainingState& state) {
  std::string payload;
  PutInt64(payload, state.epoch);
  PutInt64(payload, state.step);
  PutInt64(payload, state.sampler_position);
  PutLittleEndian<uint64_t>(payload, state.rng_state.size());
  payload += state.rng_state;
  PutTensors(payload, state.model);
  PutTensors(payload, state.optimizer);
  std::string file(kMagic, sizeof(kMagic));
  PutLittleEndian<uint32_t>(file, kVersion);
  PutLittleEndian<uint64_t>(file, payload.size());
  file += payload;
  PutLittleEndian<uint32_t>(file, Crc32(payload));
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
  Reader trailer{bytes, header.at + length};
  if (trailer.Get<uint32_t>() != Crc32(payload))
    return ddprun::InvalidArgumentError("checksum mismatch");
  Reader in{payload};
  TrainingState state;
  state.epoch = in.GetInt64();
  state.step = in.GetInt64();
  state.sampler_position = in.GetInt64();
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
  RETURN_IF_ERROR(ddprun::CreateDirectories(directory_));
  RETURN_IF_ERROR(ddprun::WriteFileAtomically(directory_ + "/" + FileName(state.step),
                                              EncodeCheckpoint(state)));
  ASSIGN_OR_RETURN(const auto files, List());
  for (size_t i = static_cast<size_t>(keep_); i < files.size(); ++i) {
    std::error_code error;
    if (!std::filesystem::remove(files[i], error) && error) {
      // The new checkpoint is safe; an old one left behind only takes space.
      ddprun::GetLogger("runtime")->warn("cannot remove the old checkpoint {}: {}", files[i],
                                         error.message());
    }
  }
  return ddprun::Status::Ok();
}

ddprun::Result<std::vector<std::string>> CheckpointDirectory::List() const {
  std::vector<std::string> files;
  std::error_code error;
  std::filesystem::directory_iterator entries(directory_, error);
  for (; !error && entries != std::filesystem::directory_iterator(); entries.increment(error)) {
    const std::string name = entries->path().filename().string();
    if (name.rfind(kPrefix, 0) == 0 && name.size() > std::strlen(kSuffix) &&
        name.compare(name.size() - std::strlen(kSuffix), std::string::npos, kSuffix) == 0) {
      files.push_back(entries->path().string());
    }
  }
  if (error) {
    return ddprun::UnavailableError("cannot read the checkpoint directory " + directory_ + ": " +
                                    error.message());
  }
  std::sort(files.rbegin(), files.rend());  // zero-padded steps: by name is by step
  return files;
}

ddprun::Result<std::optional<LoadedCheckpoint>> CheckpointDirectory::LoadNewest() const {
  std::error_code error;
  if (!std::filesystem::exists(directory_, error) && !error) {
    return std::optional<LoadedCheckpoint>();  // nothing saved yet
  }
  ASSIGN_OR_RETURN(const auto files, List());
  LoadedCheckpoint loaded;
  for (const auto& path : files) {
    auto content = ddprun::ReadFileHead(path, kMaxCheckpointBytes);
    auto state = content.ok() ? DecodeCheckpoint(content.value())
                              : ddprun::Result<TrainingState>(content.status());
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
