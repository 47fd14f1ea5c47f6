// ReadSlurmStep; see slurm_step.h.
#include "slurm_step.h"

#include <algorithm>

#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"
#include "slurm_hostlist.h"

namespace ddprun {
namespace {

constexpr int kFirstRendezvousPort = 29400;
constexpr int kRendezvousPorts = 1000;

// The step's own port (slurm_step.h); the first one where the ids are not numbers.
int RendezvousPort(const std::string& job_id, const std::string& step_id) {
  const auto job = ParseInteger<uint64_t>(job_id);
  const auto step = ParseInteger<uint64_t>(step_id);
  if (!job || !step) return kFirstRendezvousPort;
  return kFirstRendezvousPort + static_cast<int>((*job * 10 + *step) % kRendezvousPorts);
}

// The first of `names` that is set (and not empty), with its name.
std::optional<std::pair<std::string, std::string>> First(const EnvironmentMap& environment,
                                                         std::initializer_list<const char*> names) {
  for (const char* name : names) {
    auto it = environment.find(name);
    if (it != environment.end() && !it->second.empty()) return std::pair{name, it->second};
  }
  return std::nullopt;
}

Status Contradiction(const std::string& what) {
  return InvalidArgumentError("the Slurm step's variables contradict each other: " + what +
                              "; run ddprun with srun inside the allocation, or give the flags");
}

// SLURM_STEP_TASKS_PER_NODE ("1(x4)", "2,1(x3)"): the most tasks on one node; nullopt when it
// cannot be read.
std::optional<int> MostTasksOnANode(const std::string& text) {
  int most = 0;
  for (const std::string& item : SplitCommas(text)) {
    const auto tasks = ParseInteger<int>(item.substr(0, item.find('(')), 0);
    if (!tasks) return std::nullopt;
    most = std::max(most, *tasks);
  }
  return most;
}

// SLURM_GPUS_PER_NODE: "4", "a100:4", "a100:2,v100:2" (summed), "a100:4(S:0-1)"; nullopt
// otherwise.
std::optional<int> GpusPerNode(const std::string& text) {
  int total = 0;
  for (std::string item : SplitCommas(text)) {
    item = item.substr(0, item.find('('));  // "(S:0-1)": the sockets, not the count
    if (const size_t colon = item.rfind(':'); colon != std::string::npos) {
      item = item.substr(colon + 1);
    }
    const auto count = ParseInteger<int>(item, 0, 1 << 16);
    if (!count) return std::nullopt;
    total += *count;
  }
  return total;
}

}  // namespace

std::string SlurmStep::Describe() const { return "Slurm job " + job_id + ", step " + step_id; }

std::optional<std::string> SlurmStep::ValueOf(const std::string& flag) const {
  for (const DerivedFlag& derived : flags) {
    if (derived.flag == flag) return derived.value;
  }
  return std::nullopt;
}

std::string SlurmStep::Banner() const {
  std::string line = Describe() + ":";
  for (const DerivedFlag& derived : flags) {
    line += " " + derived.flag + "=" + derived.value + " (" + derived.source + ")";
  }
  return OneLine(std::move(line));  // the sources quote the environment, which may hold anything
}

Result<std::optional<SlurmStep>> ReadSlurmStep(const EnvironmentMap& environment,
                                               const std::function<int()>& count_visible_gpus) {
  const auto job = First(environment, {"SLURM_JOB_ID", "SLURM_JOBID"});
  const auto step = First(environment, {"SLURM_STEP_ID", "SLURM_STEPID"});
  if (!job || !step) return std::optional<SlurmStep>();
  for (const auto& [name, id] : {*job, *step}) {
    // Slurm's ids are numbers; they name the rendezvous and the log directory, so no white
    // space, control character or slash gets through from a corrupt environment.
    const auto unfit = [](unsigned char c) { return c <= ' ' || c == 0x7f || c == '/'; };
    if (std::any_of(id.begin(), id.end(), unfit)) {
      return Contradiction(std::string(name) + "='" + id + "' is not a Slurm id");
    }
  }
  SlurmStep out;
  out.job_id = job->second;
  out.step_id = step->second;

  if (auto per_node = First(environment, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"})) {
    const auto most = MostTasksOnANode(per_node->second);
    if (!most) return Contradiction(per_node->first + "='" + per_node->second + "' is unreadable");
    if (*most > 1) {
      return InvalidArgumentError(
          "this Slurm step runs " + std::to_string(*most) + " tasks on a node (" + per_node->first +
          "=" + per_node->second +
          "), but ddprun is one per node and starts the workers itself: run it with "
          "srun --ntasks-per-node=1 (and --nproc_per_node, or --gpus-per-node, for the workers)");
    }
  }

  const auto nodes_text =
      First(environment, {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES", "SLURM_NNODES"});
  const auto node_id_text = First(environment, {"SLURM_NODEID"});
  const auto nodelist =
      First(environment, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"});
  if (!nodes_text || !node_id_text || !nodelist) {
    return Contradiction(
        "SLURM_JOB_ID and SLURM_STEP_ID are set, but not the step's node count, SLURM_NODEID and "
        "its node list");
  }
  const auto nodes = ParseInteger<int>(nodes_text->second, 1);
  const auto node_id = ParseInteger<int>(node_id_text->second, 0);
  if (!nodes) return Contradiction(nodes_text->first + "='" + nodes_text->second + "'");
  if (!node_id || *node_id >= *nodes) {
    return Contradiction("SLURM_NODEID=" + node_id_text->second + " in a step of " +
                         nodes_text->second + " node(s)");
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> hosts, ExpandHostlist(nodelist->second));
  if (static_cast<int>(hosts.size()) != *nodes) {
    return Contradiction(nodelist->first + "=" + nodelist->second + " names " +
                         std::to_string(hosts.size()) + " node(s), " + nodes_text->first + "=" +
                         nodes_text->second);
  }
  out.flags.push_back({"--nnodes", std::to_string(*nodes), nodes_text->first});
  out.flags.push_back({"--node_rank", std::to_string(*node_id), "SLURM_NODEID"});
  out.flags.push_back(
      {"--rdzv_endpoint",
       hosts.front() + ":" + std::to_string(RendezvousPort(out.job_id, out.step_id)),
       "the first node of " + nodelist->first + "=" + nodelist->second + "; the step's port"});
  out.flags.push_back(
      {"--rdzv_id", "slurm-" + out.job_id + "." + out.step_id, job->first + ", " + step->first});
  if (auto on_node = First(environment, {"SLURM_GPUS_ON_NODE"});
      on_node && ParseInteger<int>(on_node->second, 1)) {
    out.flags.push_back({"--nproc_per_node", on_node->second, "SLURM_GPUS_ON_NODE"});
  } else if (auto per_node = First(environment, {"SLURM_GPUS_PER_NODE"});
             per_node && GpusPerNode(per_node->second).value_or(0) > 0) {
    out.flags.push_back({"--nproc_per_node", std::to_string(*GpusPerNode(per_node->second)),
                         "SLURM_GPUS_PER_NODE=" + per_node->second});
  } else if (count_visible_gpus() > 0) {
    out.flags.push_back({"--nproc_per_node", "gpu", "the GPUs found on the node"});
  }
  return std::optional<SlurmStep>(std::move(out));
}

}  // namespace ddprun
