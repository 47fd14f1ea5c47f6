// Optimizers; see optimizer.h. The element-wise updates (PyTorch's formulas) are in ops/.
#include "ddp/optimizer.h"

#include <cmath>

#include "device_errors.h"
#include "ops/ops.h"

namespace ddp {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(std::vector<ParameterRef> parameters, SgdOptions options)
      : Optimizer(std::move(parameters), 1), options_(options) {}

 private:
  void Update() override {
    for (size_t k = 0; k < parameters_.size(); ++k) {
      const ParameterRef& p = parameters_[k];
      ops::SgdUpdate(p.device, p.data, p.grad, StateBuffer(k, 0), p.count,
                     static_cast<float>(options_.lr), static_cast<float>(options_.weight_decay),
                     static_cast<float>(options_.momentum),
                     static_cast<float>(1 - options_.dampening), options_.nesterov, steps_ == 0);
    }
    ++steps_;
  }

  SgdOptions options_;
};

class Adam final : public Optimizer {
 public:
  Adam(std::vector<ParameterRef> parameters, AdamOptions options)
      : Optimizer(std::move(parameters), 2), options_(options) {}

 private:
  void Update() override {
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
      ops::AdamUpdate(p.device, p.data, p.grad, StateBuffer(k, 0), StateBuffer(k, 1), p.count,
                      beta1, beta2, wd, step_size, bias_correction2_sqrt, eps, decay,
                      options_.decoupled_weight_decay);
    }
  }

  AdamOptions options_;
};

}  // namespace

void Optimizer::EnsureState() {
  if (!state_.empty()) return;
  std::vector<FloatArray> state;
  for (const auto& p : parameters_) {
    for (size_t j = 0; j < buffers_per_parameter_; ++j) state.emplace_back(p.count, 0.0f, p.device);
  }
  state_ = std::move(state);
}

ddprun::Status Optimizer::Step() {
  return CatchDeviceErrors("the optimizer's step", [&] {
    EnsureState();
    Update();
    return ddprun::Status::Ok();
  });
}

ddprun::Status Optimizer::ZeroGrad() {
  return CatchDeviceErrors("zeroing the gradients", [&] {
    for (const auto& p : parameters_) {
      device_memory::Zero(p.grad, p.count * sizeof(float), p.device);
    }
    return ddprun::Status::Ok();
  });
}

ddprun::Result<std::vector<std::vector<float>>> Optimizer::SaveState() const {
  using State = std::vector<std::vector<float>>;
  return CatchDeviceErrors("saving the optimizer's state", [&]() -> ddprun::Result<State> {
    State state;
    for (size_t k = 0; k < parameters_.size(); ++k) {
      for (size_t j = 0; j < buffers_per_parameter_; ++j) {
        state.push_back(state_.empty() ? std::vector<float>(parameters_[k].count, 0.0f)
                                       : state_[k * buffers_per_parameter_ + j].ToHost());
      }
    }
    state.push_back({static_cast<float>(steps_)});
    return state;
  });
}

ddprun::Status Optimizer::LoadState(const std::vector<std::vector<float>>& state) {
  if (state.size() != parameters_.size() * buffers_per_parameter_ + 1) {
    return ddprun::InvalidArgumentError("optimizer state for " + std::to_string(state.size()) +
                                        " buffers does not fit " +
                                        std::to_string(parameters_.size()) + " parameters");
  }
  for (size_t i = 0; i + 1 < state.size(); ++i) {
    if (state[i].size() != parameters_[i / buffers_per_parameter_].count) {
      return ddprun::InvalidArgumentError("optimizer state of parameter " +
                                          std::to_string(i / buffers_per_parameter_) +
                                          " has the wrong size");
    }
  }
  return CatchDeviceErrors("loading the optimizer's state", [&] {
    EnsureState();
    for (size_t i = 0; i + 1 < state.size(); ++i) state_[i].CopyFromHost(state[i].data());
    steps_ = static_cast<int64_t>(state.back().empty() ? 0 : state.back()[0]);
    return ddprun::Status::Ok();
  });
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
