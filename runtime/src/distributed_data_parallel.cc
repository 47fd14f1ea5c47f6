// DistributedDataParallel; see distributed_data_parallel.h.
#include "ddp/distributed_data_parallel.h"

#include "ddprun/base/status_macros.h"
#include "device_errors.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp {
namespace {

// A view of `count` floats at `data` on `device` (the current CUDA device, for kCuda).
template <typename T>
TensorView ViewOn(Device device, T* data, size_t count) {
  TensorView view = CpuTensor(data, count);
  view.device = device;
  view.device_index = device == Device::kCuda ? cuda::CurrentDevice() : 0;
  return view;
}

// Every rank's `values`, rank after rank, gathered through memory on `device` (NCCL takes only
// device memory).
ddprun::Result<std::vector<int64_t>> AllGatherOn(Communicator& comm, Device device,
                                                 const std::vector<int64_t>& values) {
  DeviceArray<int64_t> input = DeviceArray<int64_t>(values).To(device);
  DeviceArray<int64_t> output(values.size() * static_cast<size_t>(comm.world_size()), 0, device);
  RETURN_IF_ERROR(comm.AllGather(ViewOn(device, input.data(), input.size()),
                                 ViewOn(device, output.data(), output.size())));
  return output.ToHost();
}

// The one device every parameter is on. INVALID_ARGUMENT when they are spread over several.
ddprun::Result<Device> ParameterDevice(const std::vector<nn::Parameter*>& parameters) {
  const Device device = parameters.empty() ? Device::kCpu : parameters[0]->device();
  for (auto* p : parameters) {
    if (p->device() != device) {
      return ddprun::InvalidArgumentError("DistributedDataParallel: parameter " + p->name() +
                                          " is on another device than " + parameters[0]->name() +
                                          "; move the whole module with Module::To(device)");
    }
  }
  return device;
}

// Every rank's parameter sizes must be rank 0's: gathered, then compared in the same way on
// every rank, so that every rank reports the same first mismatch.
ddprun::Status VerifyShapes(Communicator& comm, Device device,
                            const std::vector<nn::Parameter*>& parameters) {
  const auto world = static_cast<size_t>(comm.world_size());
  ASSIGN_OR_RETURN(const std::vector<int64_t> counts,
                   AllGatherOn(comm, device, {static_cast<int64_t>(parameters.size())}));
  for (size_t r = 1; r < world; ++r) {
    if (counts[r] != counts[0]) {
      return ddprun::InvalidArgumentError("DistributedDataParallel: rank 0 has " +
                                          std::to_string(counts[0]) + " parameters but rank " +
                                          std::to_string(r) + " has " + std::to_string(counts[r]) +
                                          "; every rank must build the same model");
    }
  }
  std::vector<int64_t> sizes;
  for (auto* p : parameters) sizes.push_back(static_cast<int64_t>(p->size()));
  ASSIGN_OR_RETURN(const std::vector<int64_t> all, AllGatherOn(comm, device, sizes));
  for (size_t i = 0; i < sizes.size(); ++i) {
    for (size_t r = 1; r < world; ++r) {
      if (all[r * sizes.size() + i] != all[i]) {
        return ddprun::InvalidArgumentError(
            "DistributedDataParallel: parameter " + std::to_string(i) + " (" +
            parameters[i]->name() + ") has " + std::to_string(all[i]) + " elements on rank 0 but " +
            std::to_string(all[r * sizes.size() + i]) + " on rank " + std::to_string(r) +
            "; every rank must build the same model");
      }
    }
  }
  return ddprun::Status::Ok();
}

}  // namespace

ddprun::Result<std::unique_ptr<DistributedDataParallel>> DistributedDataParallel::Create(
    nn::Module& module, Communicator& communicator, ReducerOptions options) {
  return CatchDeviceErrors("DistributedDataParallel",
                           [&] { return CreateOnDevice(module, communicator, options); });
}

ddprun::Result<std::unique_ptr<DistributedDataParallel>> DistributedDataParallel::CreateOnDevice(
    nn::Module& module, Communicator& communicator, ReducerOptions options) {
  auto parameters = module.parameters();
  ASSIGN_OR_RETURN(const Device device, ParameterDevice(parameters));
  RETURN_IF_ERROR(VerifyShapes(communicator, device, parameters));
  // Every replica starts from rank 0's parameters.
  for (auto* p : parameters) {
    RETURN_IF_ERROR(communicator.Broadcast(ViewOn(device, p->value(), p->size()), 0));
  }
  options.device = device;
  std::vector<size_t> sizes;
  for (auto* p : parameters) sizes.push_back(p->size());
  auto reducer = std::make_unique<Reducer>(communicator, sizes, options);
  // Gradients move into the bucket buffers: the all-reduce works on them in place.
  for (size_t i = 0; i < parameters.size(); ++i) {
    parameters[i]->BindGradient(reducer->GradientStorage(i));
  }
  return std::unique_ptr<DistributedDataParallel>(
      new DistributedDataParallel(module, std::move(parameters), std::move(reducer)));
}

DistributedDataParallel::DistributedDataParallel(nn::Module& module,
                                                 std::vector<nn::Parameter*> parameters,
                                                 std::unique_ptr<Reducer> reducer)
    : module_(module), parameters_(std::move(parameters)), reducer_(std::move(reducer)) {
  for (size_t i = 0; i < parameters_.size(); ++i) index_[parameters_[i]] = i;
}

ddprun::Status DistributedDataParallel::Backward(const nn::Matrix& grad_output) {
  auto backward =
      module_.Backward(grad_output, [&](nn::Parameter& p) { reducer_->MarkReady(index_.at(&p)); });
  const ddprun::Status reduced = reducer_->Finish();
  if (!backward.ok()) return backward.status();
  return reduced;
}

std::vector<ParameterRef> DistributedDataParallel::optimizer_parameters() {
  std::vector<ParameterRef> refs;
  for (auto* p : parameters_) refs.push_back({p->value(), p->grad(), p->size(), p->device()});
  return refs;
}

}  // namespace ddp
