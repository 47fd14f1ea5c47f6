// Argument checks of the collectives; see collective_arguments.h.
#include "comm/collective_arguments.h"

#include <cstdio>
#include <string>

namespace ddp {

std::string DescribeCollective(const char* name, const TensorView& tensor) {
  char size[32];
  const double bytes = static_cast<double>(tensor.bytes());
  if (bytes >= 1 << 20) {
    std::snprintf(size, sizeof(size), "%.1f MiB", bytes / (1 << 20));
  } else {
    std::snprintf(size, sizeof(size), "%.1f KiB", bytes / 1024);
  }
  return std::string(name) + " of " + std::to_string(tensor.count) + " " + NameOf(tensor.type) +
         " (" + size + ")";
}

std::shared_ptr<Work> CompletedWork(ddprun::Status status) {
  auto work = std::make_shared<Work>();
  work->Complete(std::move(status));
  return work;
}

ddprun::Status CheckDevice(const TensorView& tensor, Device expected, const char* what) {
  if (tensor.device != expected) {
    return ddprun::InvalidArgumentError(
        std::string(what) + (expected == Device::kCpu
                                 ? " is on a GPU; the CPU backend takes CPU memory only"
                                 : " is in CPU memory; the NCCL backend takes GPU tensors"));
  }
  if (tensor.data == nullptr && tensor.count > 0) {
    return ddprun::InvalidArgumentError(std::string(what) + " has no data");
  }
  return ddprun::Status::Ok();
}

ddprun::Status CheckRoot(int root, int world_size) {
  if (root >= 0 && root < world_size) return ddprun::Status::Ok();
  return ddprun::InvalidArgumentError("broadcast from rank " + std::to_string(root) +
                                      " in a world of " + std::to_string(world_size));
}

ddprun::Status CheckAllGather(const TensorView& input, const TensorView& output, int world_size) {
  if (input.type == output.type && output.count == input.count * static_cast<size_t>(world_size)) {
    return ddprun::Status::Ok();
  }
  return ddprun::InvalidArgumentError(
      "all_gather's output must hold world_size x input.count elements of the input's type");
}

ddprun::Status CheckReduceScatter(const TensorView& input, const TensorView& output,
                                  int world_size) {
  if (input.type == output.type && input.count == output.count * static_cast<size_t>(world_size)) {
    return ddprun::Status::Ok();
  }
  return ddprun::InvalidArgumentError(
      "reduce_scatter's input must hold world_size x output.count elements of the output's type");
}

}  // namespace ddp
