// Layers and losses; see nn.h.
#include "ddp/nn.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ddp::nn {

void Parameter::BindGradient(float* storage) {
  std::memmove(storage, grad_, size() * sizeof(float));
  grad_ = storage;
  own_grad_.clear();
  own_grad_.shrink_to_fit();
}

float Uniform(std::mt19937& generator, float low, float high) {
  const float unit = static_cast<float>(generator() >> 8) * (1.0f / 16777216.0f);
  return low + (high - low) * unit;
}

Linear::Linear(size_t in, size_t out, std::mt19937& generator, const std::string& name)
    : in_(in), out_(out), weight_(name + ".weight", in * out), bias_(name + ".bias", out) {
  const float bound = 1.0f / std::sqrt(static_cast<float>(in));
  for (size_t i = 0; i < weight_.size(); ++i)
    weight_.value()[i] = Uniform(generator, -bound, bound);
  for (size_t i = 0; i < bias_.size(); ++i) bias_.value()[i] = Uniform(generator, -bound, bound);
}

Matrix Linear::Forward(const Matrix& input) {
  input_ = input;
  Matrix output(input.rows, out_);
  for (size_t r = 0; r < input.rows; ++r) {
    std::memcpy(&output.data[r * out_], bias_.value(), out_ * sizeof(float));
  }
  // output = input (rows x in) * W^T (in x out) + output
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(input.rows),
              static_cast<int>(out_), static_cast<int>(in_), 1.0f, input.data.data(),
              static_cast<int>(in_), weight_.value(), static_cast<int>(in_), 1.0f,
              output.data.data(), static_cast<int>(out_));
  return output;
}

Matrix Linear::Backward(const Matrix& grad_output, const GradientReady& ready) {
  const int rows = static_cast<int>(grad_output.rows);
  // dW += dY^T (out x rows) * X (rows x in)
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, static_cast<int>(out_),
              static_cast<int>(in_), rows, 1.0f, grad_output.data.data(), static_cast<int>(out_),
              input_.data.data(), static_cast<int>(in_), 1.0f, weight_.grad(),
              static_cast<int>(in_));
  ready(weight_);
  // db += column sums of dY
  for (size_t r = 0; r < grad_output.rows; ++r) {
    for (size_t c = 0; c < out_; ++c) bias_.grad()[c] += grad_output.at(r, c);
  }
  ready(bias_);
  // dX = dY (rows x out) * W (out x in)
  Matrix grad_input(grad_output.rows, in_);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, static_cast<int>(in_),
              static_cast<int>(out_), 1.0f, grad_output.data.data(), static_cast<int>(out_),
              weight_.value(), static_cast<int>(in_), 0.0f, grad_input.data.data(),
              static_cast<int>(in_));
  return grad_input;
}

Matrix ReLU::Forward(const Matrix& input) {
  input_ = input;
  Matrix output = input;
  for (float& v : output.data) v = std::max(v, 0.0f);
  return output;
}

Matrix ReLU::Backward(const Matrix& grad_output, const GradientReady&) {
  Matrix grad_input = grad_output;
  for (size_t i = 0; i < grad_input.data.size(); ++i) {
    if (input_.data[i] <= 0.0f) grad_input.data[i] = 0.0f;
  }
  return grad_input;
}

Sequential& Sequential::Add(std::unique_ptr<Module> module) {
  modules_.push_back(std::move(module));
  return *this;
}

Matrix Sequential::Forward(const Matrix& input) {
  Matrix x = input;
  for (auto& module : modules_) x = module->Forward(x);
  return x;
}

Matrix Sequential::Backward(const Matrix& grad_output, const GradientReady& ready) {
  Matrix g = grad_output;
  for (auto it = modules_.rbegin(); it != modules_.rend(); ++it) g = (*it)->Backward(g, ready);
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

Loss MseLoss(const Matrix& prediction, const Matrix& target) {
  Loss loss;
  loss.grad = Matrix(prediction.rows, prediction.cols);
  const auto n = static_cast<float>(prediction.data.size());
  double sum = 0;
  for (size_t i = 0; i < prediction.data.size(); ++i) {
    const float d = prediction.data[i] - target.data[i];
    sum += static_cast<double>(d) * d;
    loss.grad.data[i] = 2.0f * d / n;
  }
  loss.value = static_cast<float>(sum / n);
  return loss;
}

Loss CrossEntropyLoss(const Matrix& logits, const std::vector<int64_t>& targets) {
  Loss loss;
  loss.grad = Matrix(logits.rows, logits.cols);
  const auto batch = static_cast<float>(logits.rows);
  double sum = 0;
  for (size_t r = 0; r < logits.rows; ++r) {
    const float* row = &logits.data[r * logits.cols];
    const float top = *std::max_element(row, row + logits.cols);
    double denominator = 0;
    for (size_t c = 0; c < logits.cols; ++c) denominator += std::exp(row[c] - top);
    const double log_denominator = std::log(denominator) + top;
    sum += log_denominator - row[targets[r]];
    for (size_t c = 0; c < logits.cols; ++c) {
      const double p = std::exp(row[c] - log_denominator);
      loss.grad.at(r, c) =
          static_cast<float>((p - (static_cast<int64_t>(c) == targets[r] ? 1.0 : 0.0)) / batch);
    }
  }
  loss.value = static_cast<float>(sum / batch);
  return loss;
}

}  // namespace ddp::nn
