// The one place that knows which backends exist: the CPU ring always; NCCL when built with it
// (the only #if on NCCL outside the NCCL backend itself).
#pragma once

#include <memory>

#include "ddp/process_group.h"

namespace ddp {

// Whether this build has the NCCL backend.
bool NcclBuiltIn();

// The communicator for tensors on `device`, connected through `store` (every rank at once).
// `options.backend` ("auto", "cpu", "nccl") overrides the choice; FAILED_PRECONDITION when the
// chosen backend cannot serve `device`.
ddprun::Result<std::unique_ptr<Communicator>> CreateCommunicator(const ProcessGroupOptions& options,
                                                                 Store& store, Device device);

}  // namespace ddp
