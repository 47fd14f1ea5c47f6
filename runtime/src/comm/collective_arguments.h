// What every backend checks before it issues a collective: the shapes and the root. A bad
// argument fails that one operation (INVALID_ARGUMENT, at once); it does not break the
// communicator.
#pragma once

#include <memory>
#include <string>

#include "ddp/tensor.h"
#include "ddp/work.h"
#include "ddprun/base/status.h"

namespace ddp {

// "all_reduce of 1024 float32 (4.0 KiB)": how errors name an operation.
std::string DescribeCollective(const char* name, const TensorView& tensor);

// A Work that has already completed with `status`.
std::shared_ptr<Work> CompletedWork(ddprun::Status status);

ddprun::Status CheckDevice(const TensorView& tensor, Device expected, const char* what);
ddprun::Status CheckRoot(int root, int world_size);
ddprun::Status CheckAllGather(const TensorView& input, const TensorView& output, int world_size);
ddprun::Status CheckReduceScatter(const TensorView& input, const TensorView& output,
                                  int world_size);

}  // namespace ddp
