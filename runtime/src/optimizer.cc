// Optimizers; see optimizer.h. Comments give PyTorch's formula each loop implements.
#include "ddp/optimizer.h"

#include <algorithm>
#include <cmath>

namespace ddp {
namespace {

// One flat vector per parameter, the size of the parameter.
std::vector<std::vector<float>> ZerosLike(const std::vector<ParameterRef>& parameters) {
  std::vector<std::vector<float>> state;
  for (const auto& p : parameters) state.emplace_back(p.count, 0.0f);
  return state;
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
    const float lr = static_cast<float>(options_.lr);
    const float wd = static_cast<float>(options_.weight_decay);
    const float mu = static_cast<float>(options_.momentum);
    const float damp = static_cast<float>(1 - options_.dampening);
    for (size_t k = 0; k < parameters_.size(); ++k) {
      const ParameterRef& p = parameters_[k];
      float* buf = momentum_[k].data();
      for (size_t i = 0; i < p.count; ++i) {
        float d = p.grad[i];
        if (wd != 0) d += wd * p.data[i];  // d_p = d_p + wd * p
        if (mu != 0) {
          // buf = d_p at the first step, else buf = mu * buf + (1 - dampening) * d_p
          buf[i] = steps_ == 0 ? d : mu * buf[i] + damp * d;
          d = options_.nesterov ? d + mu * buf[i] : buf[i];
        }
        p.data[i] -= lr * d;  // p = p - lr * d_p
      }
    }
    ++steps_;
  }

  std::vector<std::vector<float>> SaveState() const override {
    auto state = momentum_;
    state.push_back({static_cast<float>(steps_)});
    return state;
  }
  ddprun::Status LoadState(const std::vector<std::vector<float>>& state) override {
    if (auto s = CheckShapes(parameters_, state, 1); !s.ok()) return s;
    momentum_.assign(state.begin(), state.end() - 1);
    steps_ = static_cast<int64_t>(state.back().empty() ? 0 : state.back()[0]);
    return ddprun::Status::Ok();
  }

 private:
  SgdOptions options_;
  std::vector<std::vector<float>> momentum_;
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
      float* m = exp_avg_[k].data();
      float* v = exp_avg_sq_[k].data();
      for (size_t i = 0; i < p.count; ++i) {
        float g = p.grad[i];
        if (options_.decoupled_weight_decay) {
          p.data[i] *= decay;  // AdamW: p = p * (1 - lr * wd)
        } else if (wd != 0) {
          g += wd * p.data[i];  // Adam: grad = grad + wd * p
        }
        m[i] = beta1 * m[i] + (1 - beta1) * g;      // exp_avg
        v[i] = beta2 * v[i] + (1 - beta2) * g * g;  // exp_avg_sq
        const float denom = std::sqrt(v[i]) / bias_correction2_sqrt + eps;
        p.data[i] -=
            step_size * m[i] / denom;  // p = p - lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
      }
    }
  }

  std::vector<std::vector<float>> SaveState() const override {
    std::vector<std::vector<float>> state;
    for (size_t k = 0; k < parameters_.size(); ++k) {
      state.push_back(exp_avg_[k]);
      state.push_back(exp_avg_sq_[k]);
    }
    state.push_back({static_cast<float>(steps_)});
    return state;
  }
  ddprun::Status LoadState(const std::vector<std::vector<float>>& state) override {
    if (auto s = CheckShapes(parameters_, state, 2); !s.ok()) return s;
    for (size_t k = 0; k < parameters_.size(); ++k) {
      exp_avg_[k] = state[2 * k];
      exp_avg_sq_[k] = state[2 * k + 1];
    }
    steps_ = static_cast<int64_t>(state.back().empty() ? 0 : state.back()[0]);
    return ddprun::Status::Ok();
  }

 private:
  AdamOptions options_;
  std::vector<std::vector<float>> exp_avg_;
  std::vector<std::vector<float>> exp_avg_sq_;
};

}  // namespace

void Optimizer::ZeroGrad() {
  for (const auto& p : parameters_) std::fill(p.grad, p.grad + p.count, 0.0f);
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
