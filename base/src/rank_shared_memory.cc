// NewRankSharedMemoryName and RemoveRankSharedMemory; see rank_shared_memory.h.
#include "ddprun/base/rank_shared_memory.h"

#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <system_error>

namespace ddprun {
namespace {

std::string Prefix(pid_t pid) { return "ddprun-" + std::to_string(pid) + "-"; }

}  // namespace

std::string NewRankSharedMemoryName(std::string_view kind) {
  uint64_t value = 0;
  if (::getrandom(&value, sizeof(value), 0) != sizeof(value)) value = 0;
  char random[20];
  std::snprintf(random, sizeof(random), "%016llx", static_cast<unsigned long long>(value));
  return "/" + Prefix(::getpid()) + std::string(kind) + "-" + random;
}

int RemoveRankSharedMemory(pid_t pid) {
  // The pid is followed by '-', so pid 12's prefix does not match pid 123's names.
  const std::string prefix = Prefix(pid);
  int removed = 0;
  std::error_code error;
  std::filesystem::directory_iterator entries("/dev/shm", error);
  for (; !error && entries != std::filesystem::directory_iterator(); entries.increment(error)) {
    const std::string name = entries->path().filename().string();
    if (name.starts_with(prefix) && ::shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace ddprun
