// The checkpoint loader (ddp::DecodeCheckpoint) on arbitrary bytes. The first byte chooses what
// the rest is: even, a whole file as it might be found on disk; odd, a payload, which the target
// wraps in a valid header and checksum so that the payload's own parser is reached (random
// bytes would almost never pass the CRC). A file that loads must encode back to the same bytes:
// the format has one spelling for each state, so a loader that accepted anything else would
// accept a corruption.
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ddp/checkpoint.h"
#include "fuzz_support.h"

namespace {

template <typename T>
void PutLittleEndian(std::string& out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// The file layout of runtime/src/checkpoint.cc around `payload`.
std::string WrapPayload(std::string_view payload) {
  std::string file = "DDPCKPT1";
  PutLittleEndian<uint32_t>(file, 1);
  PutLittleEndian<uint64_t>(file, payload.size());
  file += payload;
  PutLittleEndian<uint32_t>(
      file, static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                        reinterpret_cast<const Bytef*>(payload.data()),
                                        static_cast<uInt>(payload.size()))));
  return file;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest = ddprun::fuzz::AsText(data + 1, size - 1);
  const std::string file = (data[0] & 1) != 0 ? WrapPayload(rest) : std::string(rest);
  auto decoded = ddp::DecodeCheckpoint(file);
  if (!decoded.ok()) {
    ddprun::fuzz::CheckOneLineError(decoded.status());
    return 0;
  }
  if (ddp::EncodeCheckpoint(*decoded) != file) {
    std::fprintf(stderr, "fuzz: a checkpoint loaded that does not encode back to its bytes\n");
    std::abort();
  }
  return 0;
}
