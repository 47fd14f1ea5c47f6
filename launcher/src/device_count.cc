// Counting devices; see device_count.h.
#include "device_count.h"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>

#include "ddprun/base/parsing.h"

namespace ddprun {
namespace {

constexpr int kMaxProcsPerNode = 1024;

}  // namespace

int CountGpus() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    return *visible == '\0' ? 0 : static_cast<int>(SplitCommas(visible).size());
  }
  int count = 0;
  if (DIR* dev = ::opendir("/dev")) {
    while (dirent* entry = ::readdir(dev)) {
      std::string name = entry->d_name;
      if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
          ParseInteger<int>(name.substr(6)).has_value()) {
        ++count;
      }
    }
    ::closedir(dev);
  }
  return count;
}

int CountCpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return 1;
}

Result<int> ResolveNprocPerNode(const std::string& text) {
  if (text == "cpu") return CountCpus();
  if (text == "gpu") {
    const int gpus = CountGpus();
    if (gpus == 0) {
      return InvalidArgumentError("--nproc_per_node=gpu but no GPU is visible; give a number");
    }
    return gpus;
  }
  if (text == "auto") {
    const int gpus = CountGpus();
    return gpus > 0 ? gpus : CountCpus();
  }
  auto value = ParseInteger<int>(text);
  if (!value || *value < 1 || *value > kMaxProcsPerNode) {
    return InvalidArgumentError("--nproc_per_node must be an integer from 1 to " +
                                std::to_string(kMaxProcsPerNode) + ", auto, cpu or gpu, not '" +
                                text + "'");
  }
  return *value;
}

}  // namespace ddprun
