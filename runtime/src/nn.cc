// Layers and losses; see nn.h. The arithmetic is in ops/ (CPU or CUDA, by the data's device).
//
// The ops and the device arrays report a device that cannot be used (no GPU, out of memory) by
// throwing; every public function here catches that at its boundary (CatchDeviceErrors) and
// returns it as an error value, so no exception leaves this file.
#include "ddp/nn.h"

#include <cmath>

#include "ddprun/base/status_macros.h"
#include "device_errors.h"
#include "ops/ops.h"

namespace ddp::nn {
namespace {

const char* DeviceName(Device device) { return device == Device::kCuda ? "CUDA" : "the CPU"; }

ddprun::Status RequireSameDevice(Device expected, Device actual, const std::string& what) {
  if (expected == actual) return ddprun::Status::Ok();
  return ddprun::InvalidArgumentError(what + " is on " + DeviceName(actual) + " but " +
                                      DeviceName(expected) +
                                      " holds the rest: move one of them (Matrix::To, Module::To)");
}

std::string Shape(size_t rows, size_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

}  // namespace

Matrix Matrix::Uninitialized(size_t r, size_t c, Device device) {
  Matrix matrix;
  matrix.rows = r;
  matrix.cols = c;
  matrix.data = FloatArray::Uninitialized(r * c, device);
  return matrix;
}

ddprun::Result<Matrix> Matrix::To(Device device) const {
  return CatchDeviceErrors("moving a matrix to " + std::string(DeviceName(device)),
                           [&]() -> ddprun::Result<Matrix> {
                             Matrix copy;
                             copy.rows = rows;
                             copy.cols = cols;
                             copy.data = data.To(device);
                             return copy;
                           });
}

void Parameter::To(Device device) {
  if (device == value_.device()) return;
  value_ = value_.To(device);
  own_grad_ = own_grad_.To(device);
  grad_ = own_grad_.data();
}

void Parameter::BindGradient(float* storage) {
  device_memory::Copy(storage, device(), grad_, device(), size() * sizeof(float));
  grad_ = storage;
  own_grad_ = FloatArray();
}

float Uniform(std::mt19937& generator, float low, float high) {
  const float unit = static_cast<float>(generator() >> 8) * (1.0f / 16777216.0f);
  return low + (high - low) * unit;
}

ddprun::Status Module::To(Device device) {
  return CatchDeviceErrors("moving the module to " + std::string(DeviceName(device)), [&] {
    for (Parameter* p : parameters()) p->To(device);
    return ddprun::Status::Ok();
  });
}

Linear::Linear(size_t in, size_t out, std::mt19937& generator, const std::string& name)
    : name_(name),
      in_(in),
      out_(out),
      weight_(name + ".weight", in * out),
      bias_(name + ".bias", out) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in));
  for (size_t i = 0; i < weight_.size(); ++i)
    weight_.value()[i] = Uniform(generator, -bound, bound);
  for (size_t i = 0; i < bias_.size(); ++i) bias_.value()[i] = Uniform(generator, -bound, bound);
}

ddprun::Result<Matrix> Linear::Forward(const Matrix& input) {
  const Device device = weight_.device();
  RETURN_IF_ERROR(RequireSameDevice(device, input.device(), name_ + "'s input"));
  if (input.cols != in_) {
    return ddprun::InvalidArgumentError(name_ + " takes Nx" + std::to_string(in_) +
                                        " inputs, not " + Shape(input.rows, input.cols));
  }
  return CatchDeviceErrors(name_ + " forward", [&]() -> ddprun::Result<Matrix> {
    input_ = input;
    Matrix output = Matrix::Uninitialized(input.rows, out_, device);
    ops::FillRows(device, output.data.data(), bias_.value(), input.rows, out_);
    // output = input (rows x in) * W^T (in x out) + output
    ops::Gemm(device, false, true, static_cast<int>(input.rows), static_cast<int>(out_),
              static_cast<int>(in_), 1.0f, input.data.data(), static_cast<int>(in_),
              weight_.value(), static_cast<int>(in_), 1.0f, output.data.data(),
              static_cast<int>(out_));
    return output;
  });
}

ddprun::Result<Matrix> Linear::Backward(const Matrix& grad_output, const GradientReady& ready) {
  const Device device = weight_.device();
  RETURN_IF_ERROR(RequireSameDevice(device, grad_output.device(), name_ + "'s output gradient"));
  if (grad_output.rows != input_.rows || grad_output.cols != out_) {
    return ddprun::InvalidArgumentError(name_ + "'s output gradient must be " +
                                        Shape(input_.rows, out_) +
                                        " (the last forward's rows by the layer's outputs), not " +
                                        Shape(grad_output.rows, grad_output.cols));
  }
  return CatchDeviceErrors(name_ + " backward", [&]() -> ddprun::Result<Matrix> {
    const int rows = static_cast<int>(grad_output.rows);
    // dW += dY^T (out x rows) * X (rows x in)
    ops::Gemm(device, true, false, static_cast<int>(out_), static_cast<int>(in_), rows, 1.0f,
              grad_output.data.data(), static_cast<int>(out_), input_.data.data(),
              static_cast<int>(in_), 1.0f, weight_.grad(), static_cast<int>(in_));
    ready(weight_);
    // db += column sums of dY
    ops::AccumulateColumnSums(device, bias_.grad(), grad_output.data.data(), grad_output.rows,
                              out_);
    ready(bias_);
    // dX = dY (rows x out) * W (out x in)
    Matrix grad_input = Matrix::Uninitialized(grad_output.rows, in_, device);  // beta 0: not read
    ops::Gemm(device, false, false, rows, static_cast<int>(in_), static_cast<int>(out_), 1.0f,
              grad_output.data.data(), static_cast<int>(out_), weight_.value(),
              static_cast<int>(in_), 0.0f, grad_input.data.data(), static_cast<int>(in_));
    return grad_input;
  });
}

ddprun::Result<Matrix> ReLU::Forward(const Matrix& input) {
  return CatchDeviceErrors("ReLU forward", [&]() -> ddprun::Result<Matrix> {
    input_ = input;
    Matrix output = Matrix::Uninitialized(input.rows, input.cols, input.device());
    ops::Relu(input.device(), output.data.data(), input.data.data(), input.data.size());
    return output;
  });
}

ddprun::Result<Matrix> ReLU::Backward(const Matrix& grad_output, const GradientReady&) {
  RETURN_IF_ERROR(
      RequireSameDevice(input_.device(), grad_output.device(), "ReLU's output gradient"));
  if (grad_output.rows != input_.rows || grad_output.cols != input_.cols) {
    return ddprun::InvalidArgumentError(
        "ReLU's output gradient must be " + Shape(input_.rows, input_.cols) +
        " (the last forward's shape), not " + Shape(grad_output.rows, grad_output.cols));
  }
  return CatchDeviceErrors("ReLU backward", [&]() -> ddprun::Result<Matrix> {
    Matrix grad_input =
        Matrix::Uninitialized(grad_output.rows, grad_output.cols, grad_output.device());
    ops::ReluBackward(grad_output.device(), grad_input.data.data(), grad_output.data.data(),
                      input_.data.data(), grad_input.data.size());
    return grad_input;
  });
}

Sequential& Sequential::Add(std::unique_ptr<Module> module) {
  modules_.push_back(std::move(module));
  return *this;
}

ddprun::Result<Matrix> Sequential::Forward(const Matrix& input) {
  Matrix x = input;
  for (auto& module : modules_) {
    ASSIGN_OR_RETURN(x, module->Forward(x));
  }
  return x;
}

ddprun::Result<Matrix> Sequential::Backward(const Matrix& grad_output, const GradientReady& ready) {
  Matrix g = grad_output;
  for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) {
    ASSIGN_OR_RETURN(g, (*it)->Backward(g, ready));
  }
  return g;
}

std::vector<Parameter*> Sequential::parameters() {
  std::vector<Parameter*> all;
  for (auto& module : modules_) {
    auto own = module->parameters();
    all.insert(all.end(), own.begin(), own.end());
  }
  return all;
}

ddprun::Result<Loss> MseLoss(const Matrix& prediction, const Matrix& target) {
  RETURN_IF_ERROR(RequireSameDevice(prediction.device(), target.device(), "MseLoss's target"));
  if (prediction.rows != target.rows || prediction.cols != target.cols) {
    return ddprun::InvalidArgumentError("MseLoss: the prediction is " +
                                        Shape(prediction.rows, prediction.cols) +
                                        " but the target is " + Shape(target.rows, target.cols));
  }
  return CatchDeviceErrors("MseLoss", [&]() -> ddprun::Result<Loss> {
    Loss loss;
    loss.grad = Matrix::Uninitialized(prediction.rows, prediction.cols, prediction.device());
    loss.value = ops::MseLoss(prediction.device(), prediction.data.data(), target.data.data(),
                              loss.grad.data.data(), prediction.data.size());
    return loss;
  });
}

ddprun::Result<Loss> CrossEntropyLoss(const Matrix& logits, const std::vector<int64_t>& targets) {
  if (targets.size() != logits.rows) {
    return ddprun::InvalidArgumentError("CrossEntropyLoss: " + std::to_string(targets.size()) +
                                        " targets for " + Shape(logits.rows, logits.cols) +
                                        " logits (one per row)");
  }
  for (int64_t t : targets) {
    if (t < 0 || static_cast<size_t>(t) >= logits.cols) {
      return ddprun::InvalidArgumentError("CrossEntropyLoss: target class " + std::to_string(t) +
                                          " is outside [0, " + std::to_string(logits.cols) +
                                          ") for " + Shape(logits.rows, logits.cols) + " logits");
    }
  }
  return CatchDeviceErrors("CrossEntropyLoss", [&]() -> ddprun::Result<Loss> {
    Loss loss;
    loss.grad = Matrix::Uninitialized(logits.rows, logits.cols, logits.device());
    loss.value = ops::CrossEntropyLoss(logits.device(), logits.data.data(), targets.data(),
                                       loss.grad.data.data(), logits.rows, logits.cols);
    return loss;
  });
}

}  // namespace ddp::nn
