// Where a process runs: a set of CPUs and the memory node it allocates from first. What
// --numa_binding computes (agent's numa_binding.h) and the spawner applies before exec
// (process_spawn.h), with sysfs's CPU list format both ways.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddprun {

struct WorkerBinding {
  std::vector<int> cpus;  // sorted, not empty
  int memory_node = 0;
  // "CPUs 0-3,8, memory node 0"
  std::string Describe() const;
};

// "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; nullopt when malformed. Sysfs's list format.
std::optional<std::vector<int>> ParseCpuList(std::string_view text);
// The reverse: sorted ids as ranges.
std::string FormatCpuList(const std::vector<int>& ids);

}  // namespace ddprun
