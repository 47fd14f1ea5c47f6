// CPU operations; see cpu_ops.h. Comments give PyTorch's formula each optimizer loop implements
// (torch.optim single-tensor implementations of torch 1.13); the CUDA kernels follow them.
#include "ops/cpu/cpu_ops.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ops/cpu/blas_kernels.h"

namespace ddp::cpu {

void Gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  ChooseBlasKernels();  // done at load time already; this keeps blas_kernels.o linked in
  cblas_sgemm(CblasRowMajor, transpose_a ? CblasTrans : CblasNoTrans,
              transpose_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c,
              ldc);
}

void FillRows(float* output, const float* bias, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) std::memcpy(output + r * cols, bias, cols * sizeof(float));
}

void AccumulateColumnSums(float* sums, const float* matrix, size_t rows, size_t cols) {
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) sums[c] += matrix[r * cols + c];
  }
}

void Relu(float* output, const float* input, size_t count) {
  for (size_t i = 0; i < count; ++i) output[i] = std::max(input[i], 0.0f);
}

void ReluBackward(float* grad_input, const float* grad_output, const float* input, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    // Both loaded whatever the branch, so that the select vectorizes.
    const float passed = grad_output[i];
    grad_input[i] = input[i] <= 0.0f ? 0.0f : passed;  // as threshold_backward
  }
}

float MseLoss(const float* prediction, const float* target, float* grad, size_t count) {
  const auto n = static_cast<float>(count);
  double sum = 0;
  for (size_t i = 0; i < count; ++i) {
    const float d = prediction[i] - target[i];
    sum += static_cast<double>(d) * d;
    grad[i] = 2.0f * d / n;
  }
  return static_cast<float>(sum / n);
}

float CrossEntropyLoss(const float* logits, const int64_t* targets, float* grad, size_t rows,
                       size_t cols) {
  const auto batch = static_cast<float>(rows);
  double sum = 0;
  for (size_t r = 0; r < rows; ++r) {
    const float* row = logits + r * cols;
    const float top = *std::max_element(row, row + cols);
    double denominator = 0;
    for (size_t c = 0; c < cols; ++c) denominator += std::exp(row[c] - top);
    const double log_denominator = std::log(denominator) + top;
    sum += log_denominator - row[targets[r]];
    for (size_t c = 0; c < cols; ++c) {
      const double p = std::exp(row[c] - log_denominator);
      grad[r * cols + c] =
          static_cast<float>((p - (static_cast<int64_t>(c) == targets[r] ? 1.0 : 0.0)) / batch);
    }
  }
  return static_cast<float>(sum / batch);
}

void SgdUpdate(float* value, const float* grad, float* momentum, size_t count, float lr,
               float weight_decay, float mu, float one_minus_dampening, bool nesterov,
               bool first_step) {
  for (size_t i = 0; i < count; ++i) {
    float d = grad[i];
    if (weight_decay != 0) d += weight_decay * value[i];  // d_p = d_p + wd * p
    if (mu != 0) {
      // buf = d_p at the first step, else buf = mu * buf + (1 - dampening) * d_p
      momentum[i] = first_step ? d : mu * momentum[i] + one_minus_dampening * d;
      d = nesterov ? d + mu * momentum[i] : momentum[i];
    }
    value[i] -= lr * d;  // p = p - lr * d_p
  }
}

void AdamUpdate(float* value, const float* grad, float* exp_avg, float* exp_avg_sq, size_t count,
                float beta1, float beta2, float weight_decay, float step_size,
                float bias_correction2_sqrt, float eps, float decay, bool decoupled) {
  for (size_t i = 0; i < count; ++i) {
    float g = grad[i];
    if (decoupled) {
      value[i] *= decay;  // AdamW: p = p * (1 - lr * wd)
    } else if (weight_decay != 0) {
      g += weight_decay * value[i];  // Adam: grad = grad + wd * p
    }
    exp_avg[i] = beta1 * exp_avg[i] + (1 - beta1) * g;            // m
    exp_avg_sq[i] = beta2 * exp_avg_sq[i] + (1 - beta2) * g * g;  // v
    const float denom = std::sqrt(exp_avg_sq[i]) / bias_correction2_sqrt + eps;
    value[i] -=
        step_size * exp_avg[i] / denom;  // p = p - lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps)
  }
}

}  // namespace ddp::cpu
