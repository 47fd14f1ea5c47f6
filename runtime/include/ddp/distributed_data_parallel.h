// ddp::DistributedDataParallel: PyTorch's DDP for ddp::nn modules. Each rank holds a replica of
// the model; construction checks that every rank has the same parameter shapes (a clear error
// naming the first mismatch otherwise) and copies rank 0's parameters to every rank; backward
// reduces gradients in buckets while it runs (Reducer), so that after Backward every rank holds
// the average of all ranks' gradients.
//
// The module may be on the CPU (with the CPU communicator) or on a CUDA device (moved there with
// Module::To before wrapping, with the NCCL communicator: ProcessGroup::communicator(kCuda)); the
// buckets live where the parameters are.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "ddp/communicator.h"
#include "ddp/nn.h"
#include "ddp/optimizer.h"
#include "ddp/reducer.h"

namespace ddp {

class DistributedDataParallel {
 public:
  // Every rank at once. `module` must outlive the result. INVALID_ARGUMENT naming the first
  // parameter whose shape differs between ranks, or parameters spread over several devices.
  // options.device is taken from the parameters.
  static ddprun::Result<std::unique_ptr<DistributedDataParallel>> Create(
      nn::Module& module, Communicator& communicator, ReducerOptions options = {});

  // The module's forward pass (its errors, unchanged).
  ddprun::Result<nn::Matrix> Forward(const nn::Matrix& input) { return module_.Forward(input); }
  // Backward through the module; gradients are averaged over the ranks as they become ready.
  // Errors: the module's backward error, a parameter that got no gradient
  // (FAILED_PRECONDITION), a failed all-reduce. The buckets are reduced in every case, so that
  // the ranks' collectives stay in step.
  ddprun::Status Backward(const nn::Matrix& grad_output);

  // Gradient accumulation, as PyTorch's no_sync(): while the returned guard lives, Backward
  // accumulates gradients locally; the first Backward after it reduces the sum.
  class NoSync {
   public:
    explicit NoSync(Reducer& reducer) : reducer_(reducer) { reducer_.set_sync(false); }
    ~NoSync() { reducer_.set_sync(true); }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    Reducer& reducer_;
  };
  NoSync no_sync() { return NoSync(*reducer_); }

  // The parameters with their gradients, for an optimizer.
  std::vector<ParameterRef> optimizer_parameters();
  const Reducer& reducer() const { return *reducer_; }

 private:
  // Create's body; Create turns the device layer's exceptions into errors.
  static ddprun::Result<std::unique_ptr<DistributedDataParallel>> CreateOnDevice(
      nn::Module& module, Communicator& communicator, ReducerOptions options);
  DistributedDataParallel(nn::Module& module, std::vector<nn::Parameter*> parameters,
                          std::unique_ptr<Reducer> reducer);

  nn::Module& module_;
  std::vector<nn::Parameter*> parameters_;
  std::map<const nn::Parameter*, size_t> index_;  // into parameters_ (and the reducer's gradients)
  std::unique_ptr<Reducer> reducer_;
};

}  // namespace ddp
