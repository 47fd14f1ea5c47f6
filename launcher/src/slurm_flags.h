// The flags a Slurm step gives ddprun (slurm_step.h), applied to those the user left out.
#pragma once

#include <optional>

#include "ddprun/base/flag_parser.h"
#include "ddprun/base/status.h"
#include "raw_options.h"
#include "slurm_step.h"

namespace ddprun {

// Fills in, from the Slurm step ddprun runs in, the flags the user left out (slurm_step.h). A
// --nnodes or --node_rank that contradicts the step is refused. With --standalone only
// --nproc_per_node is taken: the user asked for one node. Returns the step, its flags those
// taken; nullopt outside one.
Result<std::optional<SlurmStep>> ApplySlurmStep(const ParsedFlags& parsed, RawOptions& raw);

}  // namespace ddprun
