// DistributedDataParallel; see distributed_data_parallel.h.
#include "ddp/distributed_data_parallel.h"

namespace ddp {
namespace {

// Every rank's parameter sizes must be rank 0's: gathered, then compared in the same way on
// every rank, so that every rank reports the same first mismatch.
ddprun::Status VerifyShapes(Communicator& comm, const std::vector<nn::Parameter*>& parameters) {
  const auto world = static_cast<size_t>(comm.world_size());
  int64_t count = static_cast<int64_t>(parameters.size());
  std::vector<int64_t> counts(world);
  if (auto s = comm.AllGather(CpuTensor(&count, 1), CpuTensor(counts.data(), world)); !s.ok()) {
    return s;
  }
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
  std::vector<int64_t> all(sizes.size() * world);
  if (auto s =
          comm.AllGather(CpuTensor(sizes.data(), sizes.size()), CpuTensor(all.data(), all.size()));
      !s.ok()) {
    return s;
  }
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
  auto parameters = module.parameters();
  if (auto s = VerifyShapes(communicator, parameters); !s.ok()) return s;
  // Every replica starts from rank 0's parameters.
  for (auto* p : parameters) {
    if (auto s = communicator.Broadcast(CpuTensor(p->value(), p->size()), 0); !s.ok()) return s;
  }
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
  module_.Backward(grad_output, [&](nn::Parameter& p) { reducer_->MarkReady(index_.at(&p)); });
  return reducer_->Finish();
}

std::vector<ParameterRef> DistributedDataParallel::optimizer_parameters() {
  std::vector<ParameterRef> refs;
  for (auto* p : parameters_) refs.push_back({p->value(), p->grad(), p->size()});
  return refs;
}

}  // namespace ddp
