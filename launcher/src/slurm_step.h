// What a Slurm step says the flags are, for the flags ddprun's user left out: `srun ddprun train`
// needs none. Inside a step (SLURM_JOB_ID and SLURM_STEP_ID set):
//   --nnodes          SLURM_STEP_NUM_NODES (else SLURM_JOB_NUM_NODES, SLURM_NNODES)
//   --node_rank       SLURM_NODEID (the rendezvous then gives the node that group rank)
//   --rdzv_endpoint   the step's first node (SLURM_STEP_NODELIST, else SLURM_JOB_NODELIST,
//                     expanded here: no scontrol); its agent hosts the rendezvous. The port is
//                     the step's own, 29400 + (10 x job id + step id) mod 1000: steps whose
//                     first node is the same do not share a rendezvous (whose life is its host
//                     agent's)
//   --rdzv_id         slurm-<SLURM_JOB_ID>.<SLURM_STEP_ID>
//   --nproc_per_node  SLURM_GPUS_ON_NODE, else SLURM_GPUS_PER_NODE ("4", "a100:4", or a list of
//                     them, summed), else the GPUs found ("gpu"), else left as it is
// Each value is read from the step's own variables, never from the batch host's: srun sets them
// for every task on its node (the mistake of expanding $SLURM_NODEID in the batch script is not
// possible here). Explicit flags win; a flag that contradicts the step is refused.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/environment_map.h"
#include "ddprun/base/status.h"

namespace ddprun {

struct DerivedFlag {
  std::string flag;    // "--nnodes"
  std::string value;   // "4"
  std::string source;  // "SLURM_STEP_NUM_NODES"
};

struct SlurmStep {
  std::string job_id;
  std::string step_id;
  std::vector<DerivedFlag> flags;  // in the order above

  // "Slurm job 1234, step 0".
  std::string Describe() const;
  // The value derived for `flag`, or nullopt.
  std::optional<std::string> ValueOf(const std::string& flag) const;
  // One line (control characters escaped): each value and where it came from.
  std::string Banner() const;
};

// The step `environment` describes, or nullopt outside one. `count_visible_gpus`: the GPUs found on
// this node, called only in a step whose variables do not say (counting reads /dev, which a
// launch outside Slurm need not). INVALID_ARGUMENT, with what to do, for a step ddprun cannot
// serve: more than one task on a node (ddprun is one per node and starts the workers itself), or
// variables that contradict each other.
Result<std::optional<SlurmStep>> ReadSlurmStep(const EnvironmentMap& environment,
                                               const std::function<int()>& count_visible_gpus);

}  // namespace ddprun
