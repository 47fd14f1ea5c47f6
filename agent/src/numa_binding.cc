// --numa_binding; see numa_binding.h.
#include "ddprun/agent/numa_binding.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "ddprun/base/files.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

constexpr size_t kSysfsFileLimit = 64 * 1024;
constexpr int kMaxCpuId = 1 << 16;

// The trimmed content of a sysfs file; nullopt when it does not exist.
Result<std::optional<std::string>> ReadSysfs(const std::string& path) {
  auto text = ReadFileHead(path, kSysfsFileLimit);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) return std::optional<std::string>();
    return text.status();
  }
  return std::optional<std::string>(Trim(*text));
}

Result<int> ReadInteger(const std::string& path, int fallback) {
  ASSIGN_OR_RETURN(auto text, ReadSysfs(path));
  if (!text) return fallback;
  auto value = ParseInteger<int>(*text, -1, kMaxCpuId);
  if (!value) return InvalidArgumentError(path + " holds '" + *text + "', not a number");
  return *value;
}

Result<std::vector<int>> ReadCpuList(const std::string& path) {
  ASSIGN_OR_RETURN(auto text, ReadSysfs(path));
  if (!text) return NotFoundError(path + " does not exist");
  auto ids = ParseCpuList(*text);
  if (!ids) return InvalidArgumentError(path + " holds '" + *text + "', not a CPU list");
  return *ids;
}

// The first CPU of the L3 cache `cpu_dir` shares, or -1.
Result<int> L3Of(const std::string& cpu_dir) {
  for (int index = 0; index < 16; ++index) {
    const std::string cache = cpu_dir + "/cache/index" + std::to_string(index);
    ASSIGN_OR_RETURN(auto level, ReadSysfs(cache + "/level"));
    if (!level || *level != "3") continue;
    ASSIGN_OR_RETURN(std::vector<int> shared, ReadCpuList(cache + "/shared_cpu_list"));
    return shared.empty() ? -1 : shared.front();
  }
  return -1;
}

// The NUMA node each listed CPU is on, from the node directories; empty when there are none.
Result<std::map<int, int>> NodesOfCpus(const std::string& sysfs_root) {
  std::map<int, int> node_of;
  const std::filesystem::path nodes = sysfs_root + "/devices/system/node";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(nodes, error)) {
    const std::string name = entry.path().filename();
    if (name.rfind("node", 0) != 0) continue;
    auto node = ParseInteger<int>(std::string_view(name).substr(4), 0, kMaxCpuId);
    if (!node) continue;
    ASSIGN_OR_RETURN(std::vector<int> cpus, ReadCpuList(entry.path().string() + "/cpulist"));
    for (int cpu : cpus) node_of[cpu] = *node;
  }
  return node_of;
}

Result<std::vector<int>> GpuNodes(const std::string& sysfs_root) {
  std::vector<std::pair<std::string, int>> gpus;  // PCI address, node
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator(sysfs_root + "/bus/pci/devices", error)) {
    const std::string dir = entry.path().string();
    ASSIGN_OR_RETURN(auto vendor, ReadSysfs(dir + "/vendor"));
    ASSIGN_OR_RETURN(auto device_class, ReadSysfs(dir + "/class"));
    // NVIDIA's; a VGA (0x0300) or 3D (0x0302) controller.
    if (!vendor || *vendor != "0x10de" || !device_class ||
        (device_class->rfind("0x0300", 0) != 0 && device_class->rfind("0x0302", 0) != 0)) {
      continue;
    }
    ASSIGN_OR_RETURN(const int node, ReadInteger(dir + "/numa_node", -1));
    gpus.emplace_back(entry.path().filename(), node);
  }
  std::sort(gpus.begin(), gpus.end());
  std::vector<int> nodes;
  for (const auto& gpu : gpus) nodes.push_back(gpu.second);
  return nodes;
}

std::vector<int> NodeIds(const MachineTopology& machine) {
  std::set<int> nodes;
  for (const auto& cpu : machine.cpus) nodes.insert(cpu.node);
  return {nodes.begin(), nodes.end()};
}

// The node local rank `local_rank`'s worker belongs to: its GPU's, or the next in turn.
int NodeOfRank(const MachineTopology& machine, const std::vector<int>& nodes, int local_rank) {
  const auto gpu = static_cast<size_t>(local_rank);
  if (gpu < machine.gpu_nodes.size() && machine.gpu_nodes[gpu] >= 0 &&
      std::count(nodes.begin(), nodes.end(), machine.gpu_nodes[gpu]) == 1) {
    return machine.gpu_nodes[gpu];
  }
  return nodes[static_cast<size_t>(local_rank) % nodes.size()];
}

}  // namespace

std::optional<NumaBinding> ParseNumaBinding(std::string_view text) {
  if (text == "node") return NumaBinding::kNode;
  if (text == "socket") return NumaBinding::kSocket;
  if (text == "exclusive") return NumaBinding::kExclusive;
  if (text == "core-complex") return NumaBinding::kCoreComplex;
  return std::nullopt;
}

const char* NumaBindingName(NumaBinding binding) {
  switch (binding) {
    case NumaBinding::kNode:
      return "node";
    case NumaBinding::kSocket:
      return "socket";
    case NumaBinding::kExclusive:
      return "exclusive";
    case NumaBinding::kCoreComplex:
      return "core-complex";
  }
  return "node";
}

Result<MachineTopology> MachineTopology::Read(const std::string& sysfs_root) {
  MachineTopology machine;
  const std::string cpu_root = sysfs_root + "/devices/system/cpu";
  ASSIGN_OR_RETURN(std::vector<int> online, ReadCpuList(cpu_root + "/online"));
  ASSIGN_OR_RETURN(auto node_of, NodesOfCpus(sysfs_root));
  for (int id : online) {
    const std::string dir = cpu_root + "/cpu" + std::to_string(id);
    Cpu cpu;
    cpu.id = id;
    auto node = node_of.find(id);
    cpu.node = node == node_of.end() ? 0 : node->second;
    ASSIGN_OR_RETURN(cpu.package, ReadInteger(dir + "/topology/physical_package_id", 0));
    ASSIGN_OR_RETURN(cpu.core, ReadInteger(dir + "/topology/core_id", id));
    ASSIGN_OR_RETURN(cpu.l3, L3Of(dir));
    machine.cpus.push_back(cpu);
  }
  if (machine.cpus.empty()) return InvalidArgumentError(cpu_root + "/online lists no CPU");
  ASSIGN_OR_RETURN(machine.gpu_nodes, GpuNodes(sysfs_root));
  return machine;
}

Result<WorkerBinding> BindWorker(const MachineTopology& machine, NumaBinding binding,
                                 int local_rank, int nproc) {
  const std::vector<int> nodes = NodeIds(machine);
  const int node = NodeOfRank(machine, nodes, local_rank);
  // The workers that share the node, in local rank order, and this one's place among them.
  int share = 0;
  int shares = 0;
  for (int rank = 0; rank < nproc; ++rank) {
    if (NodeOfRank(machine, nodes, rank) != node) continue;
    if (rank == local_rank) share = shares;
    ++shares;
  }
  std::vector<MachineTopology::Cpu> on_node;
  for (const auto& cpu : machine.cpus) {
    if (cpu.node == node) on_node.push_back(cpu);
  }
  WorkerBinding bound;
  bound.memory_node = node;
  switch (binding) {
    case NumaBinding::kNode:
      for (const auto& cpu : on_node) bound.cpus.push_back(cpu.id);
      break;
    case NumaBinding::kSocket: {
      const int package = on_node.front().package;
      for (const auto& cpu : machine.cpus) {
        if (cpu.package == package) bound.cpus.push_back(cpu.id);
      }
      break;
    }
    case NumaBinding::kExclusive: {
      std::vector<std::pair<int, int>> cores;  // (package, core), in order of their first CPU
      for (const auto& cpu : on_node) {
        const std::pair<int, int> core{cpu.package, cpu.core};
        if (std::find(cores.begin(), cores.end(), core) == cores.end()) cores.push_back(core);
      }
      if (cores.size() < static_cast<size_t>(shares)) {
        return FailedPreconditionError("NUMA node " + std::to_string(node) + " has " +
                                       std::to_string(cores.size()) + " physical cores for " +
                                       std::to_string(shares) +
                                       " workers; use --numa_binding=node, or fewer workers");
      }
      const size_t begin = cores.size() * static_cast<size_t>(share) / static_cast<size_t>(shares);
      const size_t end =
          cores.size() * static_cast<size_t>(share + 1) / static_cast<size_t>(shares);
      for (const auto& cpu : on_node) {
        const auto at = std::find(cores.begin(), cores.end(), std::pair{cpu.package, cpu.core});
        const auto index = static_cast<size_t>(at - cores.begin());
        if (index >= begin && index < end) bound.cpus.push_back(cpu.id);
      }
      break;
    }
    case NumaBinding::kCoreComplex: {
      std::vector<int> caches;  // the node's L3 domains, in order of their first CPU
      for (const auto& cpu : on_node) {
        if (std::find(caches.begin(), caches.end(), cpu.l3) == caches.end()) {
          caches.push_back(cpu.l3);
        }
      }
      const int cache = caches[static_cast<size_t>(share) % caches.size()];
      for (const auto& cpu : on_node) {
        if (cpu.l3 == cache) bound.cpus.push_back(cpu.id);
      }
      break;
    }
  }
  std::sort(bound.cpus.begin(), bound.cpus.end());
  return bound;
}

Result<std::vector<WorkerBinding>> BindNodeWorkers(NumaBinding binding, int nproc) {
  ASSIGN_OR_RETURN(const MachineTopology machine, MachineTopology::Read("/sys"));
  std::vector<WorkerBinding> bindings;
  for (int local_rank = 0; local_rank < nproc; ++local_rank) {
    ASSIGN_OR_RETURN(WorkerBinding bound, BindWorker(machine, binding, local_rank, nproc));
    bindings.push_back(std::move(bound));
  }
  return bindings;
}

}  // namespace ddprun
