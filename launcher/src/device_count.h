// What --nproc_per_node=auto, cpu and gpu count on this machine.
#pragma once

#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

// GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else the NVIDIA device nodes.
int CountGpus();
// CPUs this process may run on (its affinity).
int CountCpus();
// --nproc_per_node: N (1 to 1024), auto (GPUs, else CPUs), cpu or gpu.
Result<int> ResolveNprocPerNode(const std::string& text);

}  // namespace ddprun
