// --numa_binding over prepared sysfs trees: a machine of 2 sockets, each one NUMA node of 8
// cores with 2 hyperthreads and 2 L3 domains, with 4 GPUs on each socket; the same without
// GPUs; and the CPU lists sysfs writes.
#include "ddprun/agent/numa_binding.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "support/child_process.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

void Put(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text << "\n";
}

// Socket s (node s) has cores 0-7: CPUs 8s..8s+7, their hyperthreads 16+8s.. (Linux's usual
// numbering); cores 0-3 and 4-7 each share an L3.
void WriteTwoSockets(const std::string& root, bool with_gpus) {
  const std::string cpus = root + "/devices/system/cpu";
  Put(cpus + "/online", "0-31");
  for (int cpu = 0; cpu < 32; ++cpu) {
    const int socket = (cpu / 8) % 2;
    const int core = cpu % 8;
    const std::string dir = cpus + "/cpu" + std::to_string(cpu);
    Put(dir + "/topology/physical_package_id", std::to_string(socket));
    Put(dir + "/topology/core_id", std::to_string(core));
    Put(dir + "/cache/index0/level", "1");
    Put(dir + "/cache/index0/shared_cpu_list", std::to_string(cpu));
    Put(dir + "/cache/index3/level", "3");
    const int first = 8 * socket + (core < 4 ? 0 : 4);
    Put(dir + "/cache/index3/shared_cpu_list",
        std::to_string(first) + "-" + std::to_string(first + 3) + "," + std::to_string(first + 16) +
            "-" + std::to_string(first + 19));
  }
  Put(root + "/devices/system/node/node0/cpulist", "0-7,16-23");
  Put(root + "/devices/system/node/node1/cpulist", "8-15,24-31");
  Put(root + "/devices/system/node/online", "0-1");  // not a node directory: ignored
  const std::string pci = root + "/bus/pci/devices/";
  // Not GPUs: a network card, and an NVIDIA bridge (NVSwitch).
  Put(pci + "0000:17:00.0/vendor", "0x8086");
  Put(pci + "0000:17:00.0/class", "0x020000");
  Put(pci + "0000:07:00.0/vendor", "0x10de");
  Put(pci + "0000:07:00.0/class", "0x068000");
  Put(pci + "0000:07:00.0/numa_node", "0");
  if (!with_gpus) return;
  const std::pair<const char*, int> gpus[] = {
      {"0000:db:00.0", 1}, {"0000:18:00.0", 0}, {"0000:9a:00.0", 1}, {"0000:2a:00.0", 0},
      {"0000:ab:00.0", 1}, {"0000:3a:00.0", 0}, {"0000:ba:00.0", 1}, {"0000:5d:00.0", 0}};
  for (const auto& [address, node] : gpus) {
    Put(pci + address + "/vendor", "0x10de");
    Put(pci + address + "/class", "0x030200");
    Put(pci + address + "/numa_node", std::to_string(node));
  }
}

MachineTopology Machine(bool with_gpus) {
  ScratchDir root;
  WriteTwoSockets(root.path(), with_gpus);
  auto machine = MachineTopology::Read(root.path());
  INFO(machine.status().message());
  REQUIRE(machine.ok());
  return *machine;
}

std::string Bound(const MachineTopology& machine, NumaBinding binding, int local_rank,
                  int nproc = 8) {
  auto bound = BindWorker(machine, binding, local_rank, nproc);
  INFO(bound.status().message());
  REQUIRE(bound.ok());
  return bound->Describe();
}

}  // namespace

TEST_CASE("the topology is read from sysfs: CPUs, nodes, cores, L3 domains and GPUs",
          "[numa_binding]") {
  const MachineTopology machine = Machine(true);
  REQUIRE(machine.cpus.size() == 32);
  CHECK(machine.cpus[9].node == 1);
  CHECK(machine.cpus[9].package == 1);
  CHECK(machine.cpus[25].core == 1);
  CHECK(machine.cpus[21].l3 == 4);
  // In PCI address order; the bridge and the network card are no GPUs.
  CHECK(machine.gpu_nodes == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("node: the CPUs and memory of the GPU's NUMA node", "[numa_binding]") {
  const MachineTopology machine = Machine(true);
  CHECK(Bound(machine, NumaBinding::kNode, 0) == "CPUs 0-7,16-23, memory node 0");
  CHECK(Bound(machine, NumaBinding::kNode, 3) == "CPUs 0-7,16-23, memory node 0");
  CHECK(Bound(machine, NumaBinding::kNode, 5) == "CPUs 8-15,24-31, memory node 1");
}

TEST_CASE("socket: every CPU of the GPU's socket", "[numa_binding]") {
  const MachineTopology machine = Machine(true);
  CHECK(Bound(machine, NumaBinding::kSocket, 6) == "CPUs 8-15,24-31, memory node 1");
}

TEST_CASE("exclusive: the node's cores split among its GPUs' workers, hyperthreads with them",
          "[numa_binding]") {
  const MachineTopology machine = Machine(true);
  CHECK(Bound(machine, NumaBinding::kExclusive, 0) == "CPUs 0-1,16-17, memory node 0");
  CHECK(Bound(machine, NumaBinding::kExclusive, 3) == "CPUs 6-7,22-23, memory node 0");
  CHECK(Bound(machine, NumaBinding::kExclusive, 4) == "CPUs 8-9,24-25, memory node 1");
  // Two workers on a node of 8 cores: 4 cores each.
  CHECK(Bound(machine, NumaBinding::kExclusive, 1, 2) == "CPUs 4-7,20-23, memory node 0");
}

TEST_CASE("core-complex: one L3 domain each, in turn", "[numa_binding]") {
  const MachineTopology machine = Machine(true);
  CHECK(Bound(machine, NumaBinding::kCoreComplex, 0) == "CPUs 0-3,16-19, memory node 0");
  CHECK(Bound(machine, NumaBinding::kCoreComplex, 1) == "CPUs 4-7,20-23, memory node 0");
  CHECK(Bound(machine, NumaBinding::kCoreComplex, 2) == "CPUs 0-3,16-19, memory node 0");
  CHECK(Bound(machine, NumaBinding::kCoreComplex, 7) == "CPUs 12-15,28-31, memory node 1");
}

TEST_CASE("without GPUs the ranks are spread over the NUMA nodes", "[numa_binding]") {
  const MachineTopology machine = Machine(false);
  CHECK(machine.gpu_nodes.empty());
  CHECK(Bound(machine, NumaBinding::kNode, 0) == "CPUs 0-7,16-23, memory node 0");
  CHECK(Bound(machine, NumaBinding::kNode, 1) == "CPUs 8-15,24-31, memory node 1");
  CHECK(Bound(machine, NumaBinding::kNode, 2) == "CPUs 0-7,16-23, memory node 0");
  // Ranks 0 and 2 share node 0: half its cores each.
  CHECK(Bound(machine, NumaBinding::kExclusive, 2, 4) == "CPUs 4-7,20-23, memory node 0");
}

TEST_CASE("exclusive shares for more workers than a node has cores are refused", "[numa_binding]") {
  const MachineTopology machine = Machine(false);
  auto bound = BindWorker(machine, NumaBinding::kExclusive, 0, 20);
  REQUIRE_FALSE(bound.ok());
  CHECK(bound.status().message() ==
        "NUMA node 0 has 8 physical cores for 10 workers; use --numa_binding=node, or fewer "
        "workers");
}

TEST_CASE("a sysfs tree without the CPU list is an error naming the file", "[numa_binding]") {
  ScratchDir root;
  auto machine = MachineTopology::Read(root.path());
  REQUIRE_FALSE(machine.ok());
  CHECK(machine.status().message() == root.path() + "/devices/system/cpu/online does not exist");
}

TEST_CASE("CPU lists are read and written in sysfs's format", "[numa_binding]") {
  CHECK(ParseCpuList("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(ParseCpuList("") == std::vector<int>{});
  CHECK_FALSE(ParseCpuList("3-1"));
  CHECK_FALSE(ParseCpuList("a"));
  CHECK_FALSE(ParseCpuList("1,,2"));
  CHECK(FormatCpuList({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11");
  CHECK(ParseNumaBinding("core-complex") == NumaBinding::kCoreComplex);
  CHECK_FALSE(ParseNumaBinding("cores"));
}
