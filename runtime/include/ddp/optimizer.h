// Optimizers over raw float32 parameter buffers, with PyTorch's update formulas (torch.optim.SGD,
// Adam, AdamW, single-tensor implementations of torch 1.13). Each parameter is a buffer and its
// gradient buffer of the same length, owned by the caller, on the CPU or a CUDA device (updates
// then run as kernels on the legacy default stream). State (momentum, moments, the step count) is
// kept per parameter, on the parameter's device, and can be saved and restored (checkpoints).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ddp/device_array.h"
#include "ddprun/base/status.h"

namespace ddp {

struct ParameterRef {
  float* data = nullptr;
  float* grad = nullptr;
  size_t count = 0;
  Device device = Device::kCpu;  // where data and grad are
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // One update of every parameter from its gradient. The state is made on the parameters' device
  // at the first step (as PyTorch's is): FAILED_PRECONDITION or RESOURCE_EXHAUSTED when that
  // device cannot be used.
  ddprun::Status Step();
  // Sets every gradient to zero.
  ddprun::Status ZeroGrad();

  // The state as flat float vectors on the host (and the step count), in a fixed order: each
  // parameter's buffers in turn (SGD: momentum; Adam: exp_avg, exp_avg_sq), zeros before the
  // first step. Load takes what Save gave: INVALID_ARGUMENT when the shapes do not match this
  // optimizer's parameters.
  ddprun::Result<std::vector<std::vector<float>>> SaveState() const;
  ddprun::Status LoadState(const std::vector<std::vector<float>>& state);
  int64_t steps() const { return steps_; }

 protected:
  Optimizer(std::vector<ParameterRef> parameters, size_t buffers_per_parameter)
      : parameters_(std::move(parameters)), buffers_per_parameter_(buffers_per_parameter) {}
  // Updates every parameter and the step count; the state exists.
  virtual void Update() = 0;
  // State buffer `j` of parameter `k`, on the parameter's device.
  float* StateBuffer(size_t k, size_t j) { return state_[k * buffers_per_parameter_ + j].data(); }

  std::vector<ParameterRef> parameters_;
  int64_t steps_ = 0;

 private:
  // Makes the state (zeros) unless it exists.
  void EnsureState();

  size_t buffers_per_parameter_;
  std::vector<FloatArray> state_;  // empty until the first Step or LoadState
};

struct SgdOptions {
  double lr = 0.01;
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool decoupled_weight_decay = false;  // true: AdamW
};

std::unique_ptr<Optimizer> MakeSgd(std::vector<ParameterRef> parameters, SgdOptions options);
std::unique_ptr<Optimizer> MakeAdam(std::vector<ParameterRef> parameters, AdamOptions options);
// AdamW: Adam with decoupled weight decay (PyTorch's default weight_decay for AdamW is 0.01).
std::unique_ptr<Optimizer> MakeAdamW(std::vector<ParameterRef> parameters, AdamOptions options);

}  // namespace ddp
