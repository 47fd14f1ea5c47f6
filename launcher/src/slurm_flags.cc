// ApplySlurmStep; see slurm_flags.h.
#include "slurm_flags.h"

#include <map>

#include "ddprun/base/environment_map.h"
#include "ddprun/base/status_macros.h"
#include "device_count.h"

namespace ddprun {

// Fills in, from the Slurm step ddprun runs in, the flags the user left out (slurm_step.h). A
// --nnodes or --node_rank that contradicts the step is refused. With --standalone only
// --nproc_per_node is taken: the user asked for one node. Returns the step, its flags those
// taken; nullopt outside one.
Result<std::optional<SlurmStep>> ApplySlurmStep(const ParsedFlags& parsed, RawOptions& raw) {
  ASSIGN_OR_RETURN(auto step, ReadSlurmStep(CurrentEnvironment(), CountGpus));
  if (!step) return step;
  const std::map<std::string, std::string*> strings = {{"--nnodes", &raw.nnodes},
                                                       {"--rdzv_endpoint", &raw.rdzv_endpoint},
                                                       {"--rdzv_id", &raw.run_id},
                                                       {"--nproc_per_node", &raw.nproc_per_node}};
  std::vector<DerivedFlag> taken;
  for (const DerivedFlag& derived : step->flags) {
    if (raw.standalone && derived.flag != "--nproc_per_node") continue;
    if (parsed.Given(derived.flag)) {
      const bool contradicts =
          (derived.flag == "--nnodes" && raw.nnodes.find(':') == std::string::npos &&
           raw.nnodes != derived.value) ||
          (derived.flag == "--node_rank" && std::to_string(raw.node_rank) != derived.value);
      if (contradicts) {
        return InvalidArgumentError(
            derived.flag + "=" +
            (derived.flag == "--nnodes" ? raw.nnodes : std::to_string(raw.node_rank)) +
            " contradicts the Slurm step (" + derived.flag + "=" + derived.value + " from " +
            derived.source + "); leave the flag out under srun");
      }
      continue;  // given, and so it stands
    }
    if (derived.flag == "--node_rank") {
      raw.node_rank = std::stoi(derived.value);
      raw.node_rank_given = true;
    } else {
      *strings.at(derived.flag) = derived.value;
    }
    taken.push_back(derived);
  }
  step->flags = std::move(taken);
  return step;
}

}  // namespace ddprun
