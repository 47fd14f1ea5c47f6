// Optimizers; see optimizer.h. The element-wise updates (PyTorch's formulas) are in ops/.
#include "ddp/optimizer.h"

#include <cmath>

#include "ddprun/base/status_macros.h"
#include "ops/ops.h"

namespace ddp {
namespace {

using State = std::vector<FloatArray>;

// One array per parameter, the size of the parameter, on its device.
State ZerosLike(const std::vector<ParameterRef>& parameters) {
  State state;
  for (const auto& p : parameters) state.emplace_back(p.count, 0.0f, p.device);
  return state;
}

void Restore(FloatArray& array, const std::vector<float>& values) {
  array.CopyFromHost(values.data());
}

ddprun::Status CheckShapes(const std::vector<ParameterRef>& parameters,
                           const std::vector<std::vector<float>>& state, size_t per_parameter) {
  if (state.size() != parameters.size() * per_parameter + 1) {
    return ddprun::InvalidArgumentError("optimizer state for " + std::to_string(state.size()) +
                                        " buffers does not fit " +
                                        std::to_string(parameters.size()) + " parameters");
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    for (size_t k = 0; k < per_parameter; ++k) {
      if (state[i * per_parameter + k].size() != parameters[i].count) {
        return ddprun::InvalidArgumentError("optimizer state of parameter " + std::to_string(i) +
                                            " has the wrong size");
      }
    }
  }
  return ddprun::Status::Ok();
}

class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<ParameterRef> parameters, SgdOptions options)
      : Optimizer(std::move(parameters)), options_(options), momentum_(ZerosLike(parameters_)) {}

  void Step() override {
    for (size_t k = 0; k < parameters_.size(); ++k) {
      const ParameterRef& p = parameters_[k];
      ops::SgdUpdate(p.device, p.data, p.grad, momentum_[k].data(), p.count,
                     static_cast<float>(options_.lr), static_cast<float>(options_.weight_decay),
                     static_cast<float>(options_.momentum),
                     static_cast<float>(1 - options_.dampening), options_.nesterov, steps_ == 0);
    }
    ++steps_;
  }

  std::vector<std::vector<float>> SaveState() const override {
    std::vector<std::vector<float>> state;
    for (const auto& buffer : momentum_) state.push_back(buffer.ToHost());
    state.push_back({static_cast<float>(steps_)});
    return state;
  }
  ddprun::Status LoadState(const std::vector<std::vector<float>>& state) override {
    RETURN_IF_ERROR(CheckShapes(parameters_, state, 1));
    for (size_t k = 0; k < parameters_.size(); ++k) Restore(momentum_[k], state[k]);
    steps_ = static_cast<int64_t>(state.back().empty() ? 0 : state.back()[0]);
    return ddprun::Status::Ok();
  }

 private:
  SgdOptions options_;
  State momentum_;
};

class Adam final : public Optimizer {
 public:
  Adam(std::vector<ParameterRef> parameters, AdamOptions options)
      : Optimizer(std::move(parameters)),
        options_(options),
        exp_avg_(ZerosLike(parameters_)),
        exp_avg_sq_(ZerosLike(parameters_)) {}

  void Step() override {
    ++steps_;
    const auto step = static_cast<double>(steps_);
    const float beta1 = static_cast<float>(options_.beta1);
    const float beta2 = static_cast<float>(options_.beta2);
    const float wd = static_cast<float>(options_.weight_decay);
    const double bias_correction1 = 1 - std::pow(options_.beta1, step);
    const double bias_correction2 = 1 - std::pow(options_.beta2, step);
    const float step_size = static_cast<float>(options_.lr / bias_correction1);
    const float bias_correction2_sqrt = static_cast<float>(std::sqrt(bias_correction2));
    const float eps = static_cast<float>(options_.eps);
    const float decay = static_cast<float>(1 - options_.lr * options_.weight_decay);
    for (size_t k = 0; k < parameters_.size(); ++k) {
      const ParameterRef& p = parameters_[k];
      ops::AdamUpdate(p.device, p.data, p.grad, exp_avg_[k].data(), exp_avg_sq_[k].data(), p.count,
                      beta1, beta2, wd, step_size, bias_correction2_sqrt, eps, decay,
                      options_.decoupled_weight_decay);
    }
  }

  std::vector<std::vector<float>> SaveState() const override {
    std::vector<std::vector<float>> state;
    for (size_t k = 0; k < parameters_.size(); ++k) {
      state.push_back(exp_avg_[k].ToHost());
      state.push_back(exp_avg_sq_[k].ToHost());
    }
    state.push_back({static_cast<float>(steps_)});
    return state;
  }
  ddprun::Status LoadState(const std::vector<std::vector<float>>& state) override {
    RETURN_IF_ERROR(CheckShapes(parameters_, state, 2));
    for (size_t k = 0; k < parameters_.size(); ++k) {
      Restore(exp_avg_[k], state[2 * k]);
      Restore(exp_avg_sq_[k], state[2 * k + 1]);
    }
    steps_ = static_cast<int64_t>(state.back().empty() ? 0 : state.back()[0]);
    return ddprun::Status::Ok();
  }

 private:
  AdamOptions options_;
  State exp_avg_;
  State exp_avg_sq_;
};

}  // namespace

void Optimizer::ZeroGrad() {
  for (const auto& p : parameters_) device_memory::Zero(p.grad, p.count * sizeof(float), p.device);
}

std::unique_ptr<Optimizer> MakeSgd(std::vector<ParameterRef> parameters, SgdOptions options) {
  return std::make_unique<Sgd>(std::move(parameters), options);
}

std::unique_ptr<Optimizer> MakeAdam(std::vector<ParameterRef> parameters, AdamOptions options) {
  options.decoupled_weight_decay = false;
  return std::make_unique<Adam>(std::move(parameters), options);
}

std::unique_ptr<Optimizer> MakeAdamW(std::vector<ParameterRef> parameters, AdamOptions options) {
  options.decoupled_weight_decay = true;
  return std::make_unique<Adam>(std::move(parameters), options);
}

}  // namespace ddp
