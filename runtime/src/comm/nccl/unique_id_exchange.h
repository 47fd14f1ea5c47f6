// The NCCL unique ID of a round, shared through the job's store: rank 0 creates it with
// ncclGetUniqueId and sets it under the round's key; every other rank waits for that key.
// (ncclGetUniqueId needs no GPU, so this part is tested on any machine.)
#pragma once

#include <nccl.h>

#include <chrono>

#include "ddp/store.h"

namespace ddp::nccl {

inline constexpr char kUniqueIdKey[] = "ddp/nccl/unique_id";

ddprun::Result<ncclUniqueId> ExchangeUniqueId(Store& store, int rank,
                                              std::chrono::milliseconds timeout);

}  // namespace ddp::nccl
