// Layers for training real MLPs on the CPU or a CUDA GPU: float32 matrices (a batch of rows),
// Linear, ReLU, Sequential, and the MSE and cross-entropy losses. Forward and backward are
// explicit and layer by layer; backward goes through the layers in reverse and announces each
// parameter's gradient the moment it is computed (what DistributedDataParallel's reducer listens
// to). Gradients accumulate (+=) until zeroed, as in PyTorch. Matrix products use OpenBLAS on the
// CPU and cuBLAS on the GPU, where layers run on the legacy default stream.
//
// A module computes on the device its parameters are on (Module::To moves them, as PyTorch's
// model.to(device)); its inputs must be there too (Matrix::To).
//
// Errors are values: Forward, Backward, the losses, Matrix::To and Module::To return
// INVALID_ARGUMENT naming both shapes (or both devices) when their inputs do not fit, and
// FAILED_PRECONDITION or RESOURCE_EXHAUSTED when the device cannot be used; nothing is read out
// of bounds and no exception leaves these functions. The value types are the one exception, as
// the standard containers are: making or copying a Matrix, a DeviceArray or a Parameter's value
// where the device cannot be used throws (device_array.h). A module belongs to one thread at a
// time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ddp/device_array.h"
#include "ddprun/base/status.h"

namespace ddp::nn {

// Row-major rows x cols, on the CPU or a CUDA device.
struct Matrix {
  size_t rows = 0;
  size_t cols = 0;
  FloatArray data;

  Matrix() = default;
  Matrix(size_t r, size_t c, float fill = 0.0f, Device device = Device::kCpu)
      : rows(r), cols(c), data(r * c, fill, device) {}
  // rows x cols with undefined contents: for outputs a layer overwrites whole.
  static Matrix Uninitialized(size_t r, size_t c, Device device);
  Device device() const { return data.device(); }
  // A copy on `device`. FAILED_PRECONDITION or RESOURCE_EXHAUSTED when it cannot be used.
  ddprun::Result<Matrix> To(Device device) const;
  // CPU matrices only.
  float& at(size_t r, size_t c) { return data[r * cols + c]; }
  float at(size_t r, size_t c) const { return data[r * cols + c]; }
};

// A trainable tensor and its gradient. The gradient normally lives in the parameter's own
// storage; DistributedDataParallel points it into a bucket buffer instead (BindGradient), so that
// the reducer all-reduces it in place with no copy.
class Parameter {
 public:
  // `count` zeros on the CPU.
  Parameter(std::string name, size_t count)
      : name_(std::move(name)), value_(count), own_grad_(count), grad_(own_grad_.data()) {}
  Parameter(const Parameter&) = delete;
  Parameter& operator=(const Parameter&) = delete;

  const std::string& name() const { return name_; }
  size_t size() const { return value_.size(); }
  float* value() { return value_.data(); }
  const float* value() const { return value_.data(); }
  float* grad() { return grad_; }
  Device device() const { return value_.device(); }
  // Moves the value and the gradient to `device`. Not after BindGradient.
  void To(Device device);
  // Moves the gradient to `storage` (size() floats on device()), keeping its current values.
  void BindGradient(float* storage);
  // The value as a CPU vector, and overwriting it from one (size() floats), on any device.
  std::vector<float> ValueOnHost() const { return value_.ToHost(); }
  void SetValueFromHost(const float* values) { value_.CopyFromHost(values); }

 private:
  std::string name_;
  FloatArray value_;
  FloatArray own_grad_;
  float* grad_;
};

using GradientReady = std::function<void(Parameter&)>;

class Module {
 public:
  virtual ~Module() = default;
  virtual ddprun::Result<Matrix> Forward(const Matrix& input) = 0;
  // The gradient of the loss with respect to the last Forward's input, given the one with
  // respect to its output. Calls `ready` for each parameter once its gradient is complete.
  virtual ddprun::Result<Matrix> Backward(const Matrix& grad_output,
                                          const GradientReady& ready) = 0;
  // In definition order.
  virtual std::vector<Parameter*> parameters() { return {}; }
  // Moves every parameter to `device`, as PyTorch's module.to(device). Before
  // DistributedDataParallel wraps the module. FAILED_PRECONDITION naming the device when it
  // cannot be used here.
  ddprun::Status To(Device device);
};

// y = x W^T + b, W: out x in. Initialized as torch.nn.Linear: U(-1/sqrt(in), 1/sqrt(in)).
class Linear final : public Module {
 public:
  Linear(size_t in, size_t out, std::mt19937& generator, const std::string& name = "linear");
  // INVALID_ARGUMENT unless `input` has `in` columns.
  ddprun::Result<Matrix> Forward(const Matrix& input) override;
  // INVALID_ARGUMENT unless `grad_output` is rows x `out` for the last Forward's rows.
  ddprun::Result<Matrix> Backward(const Matrix& grad_output, const GradientReady& ready) override;
  std::vector<Parameter*> parameters() override { return {&weight_, &bias_}; }
  Parameter& weight() { return weight_; }
  Parameter& bias() { return bias_; }

 private:
  std::string name_;
  size_t in_;
  size_t out_;
  Parameter weight_;
  Parameter bias_;
  Matrix input_;  // the last Forward's input, for Backward
};

class ReLU final : public Module {
 public:
  ddprun::Result<Matrix> Forward(const Matrix& input) override;
  // INVALID_ARGUMENT unless `grad_output` has the last Forward's shape.
  ddprun::Result<Matrix> Backward(const Matrix& grad_output, const GradientReady& ready) override;

 private:
  Matrix input_;
};

class Sequential final : public Module {
 public:
  Sequential& Add(std::unique_ptr<Module> module);
  // The first module's error, if any, stops the pass.
  ddprun::Result<Matrix> Forward(const Matrix& input) override;
  ddprun::Result<Matrix> Backward(const Matrix& grad_output, const GradientReady& ready) override;
  std::vector<Parameter*> parameters() override;

 private:
  std::vector<std::unique_ptr<Module>> modules_;
};

struct Loss {
  float value = 0;
  Matrix grad;  // of the loss with respect to the prediction
};

// mean((prediction - target)^2) over every element. Both of one shape on the same device; so is
// the gradient. INVALID_ARGUMENT naming both shapes (or devices) otherwise.
ddprun::Result<Loss> MseLoss(const Matrix& prediction, const Matrix& target);
// mean over the batch of -log softmax(logits)[target]; targets are class indices, on the host,
// one per row. INVALID_ARGUMENT for a count that is not the rows' or a class out of range.
ddprun::Result<Loss> CrossEntropyLoss(const Matrix& logits, const std::vector<int64_t>& targets);

// A uniform float in [low, high) from `generator` (24 random bits), used by initializations.
float Uniform(std::mt19937& generator, float low, float high);

}  // namespace ddp::nn
