// --numa_binding (torchrun 2.9's --numa-binding): each worker runs on the CPUs nearest its GPU,
// and allocates from that GPU's memory node first. Local rank r's GPU is the r-th NVIDIA GPU in
// PCI address order; where there is no GPU for it (no GPU at all, or more workers than GPUs),
// the ranks are spread over the NUMA nodes in turn (rank r on node r mod nodes).
//
//   node          every CPU of the GPU's NUMA node
//   socket        every CPU of the socket (physical package) that node is on
//   exclusive     the node's physical cores (with their hyperthreads) split into disjoint,
//                 contiguous shares among the workers whose GPU is on that node
//   core-complex  one L3 cache domain of the node, a different one for each of its workers while
//                 there are enough
//
// What the binding reads is sysfs (/sys/devices/system/cpu, /sys/devices/system/node,
// /sys/bus/pci/devices), under a root the tests give as a prepared tree. The agent applies a
// binding before exec: sched_setaffinity to the CPUs, set_mempolicy(MPOL_PREFERRED) to the node
// (preferred, not bound: a full node does not end the worker). Pure but for the reading.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/cpu_binding.h"
#include "ddprun/base/status.h"

namespace ddprun {

enum class NumaBinding { kNode, kSocket, kExclusive, kCoreComplex };

// "node", "socket", "exclusive", "core-complex"; nullopt for anything else.
std::optional<NumaBinding> ParseNumaBinding(std::string_view text);
const char* NumaBindingName(NumaBinding binding);

// The machine as the binding sees it.
struct MachineTopology {
  struct Cpu {
    int id = 0;
    int node = 0;     // its NUMA node (0 where the kernel has no NUMA)
    int package = 0;  // its socket
    int core = 0;     // its physical core, within the package
    int l3 = -1;      // the first CPU of its L3 cache's shared_cpu_list; -1: not known
  };
  std::vector<Cpu> cpus;       // the online ones, by id
  std::vector<int> gpu_nodes;  // each NVIDIA GPU's NUMA node, in PCI address order; -1: none

  // The machine under `sysfs_root` ("/sys", or a test's tree). An error names the file that
  // could not be read or made no sense.
  static Result<MachineTopology> Read(const std::string& sysfs_root);
};

// The binding of the worker of `local_rank`, one of `nproc` on this node. FAILED_PRECONDITION,
// saying why, when the machine cannot give it (exclusive shares for more workers than a node
// has cores).
Result<WorkerBinding> BindWorker(const MachineTopology& machine, NumaBinding binding,
                                 int local_rank, int nproc);

// Every local rank's binding on this machine (/sys), by local rank: what --numa_binding gives
// the supervisor. An error says what could not be read or given.
Result<std::vector<WorkerBinding>> BindNodeWorkers(NumaBinding binding, int nproc);

}  // namespace ddprun
