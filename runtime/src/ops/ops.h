// The operations of layers, losses and optimizers, on whichever device the data lives: each
// function forwards to ops/cpu (OpenBLAS, loops) or ops/cuda (cuBLAS, kernels), which implement
// the same contracts (documented in ops/cuda/cuda_ops.h). All pointers must be on `device`, except
// CrossEntropyLoss's targets, which are always on the host.
#pragma once

#include "ddp/tensor.h"
#include "ops/cpu/cpu_ops.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp::ops {

inline void Gemm(Device device, bool transpose_a, bool transpose_b, int m, int n, int k,
                 float alpha, const float* a, int lda, const float* b, int ldb, float beta,
                 float* c, int ldc) {
  (device == Device::kCuda ? cuda::Gemm : cpu::Gemm)(transpose_a, transpose_b, m, n, k, alpha, a,
                                                     lda, b, ldb, beta, c, ldc);
}

inline void FillRows(Device device, float* output, const float* bias, size_t rows, size_t cols) {
  (device == Device::kCuda ? cuda::FillRows : cpu::FillRows)(output, bias, rows, cols);
}

inline void AccumulateColumnSums(Device device, float* sums, const float* matrix, size_t rows,
                                 size_t cols) {
  (device == Device::kCuda ? cuda::AccumulateColumnSums : cpu::AccumulateColumnSums)(sums, matrix,
                                                                                     rows, cols);
}

inline void Relu(Device device, float* output, const float* input, size_t count) {
  (device == Device::kCuda ? cuda::Relu : cpu::Relu)(output, input, count);
}

inline void ReluBackward(Device device, float* grad_input, const float* grad_output,
                         const float* input, size_t count) {
  (device == Device::kCuda ? cuda::ReluBackward : cpu::ReluBackward)(grad_input, grad_output, input,
                                                                     count);
}

inline float MseLoss(Device device, const float* prediction, const float* target, float* grad,
                     size_t count) {
  return (device == Device::kCuda ? cuda::MseLoss : cpu::MseLoss)(prediction, target, grad, count);
}

inline float CrossEntropyLoss(Device device, const float* logits, const int64_t* targets,
                              float* grad, size_t rows, size_t cols) {
  return (device == Device::kCuda ? cuda::CrossEntropyLoss : cpu::CrossEntropyLoss)(
      logits, targets, grad, rows, cols);
}

inline void SgdUpdate(Device device, float* value, const float* grad, float* momentum, size_t count,
                      float lr, float weight_decay, float mu, float one_minus_dampening,
                      bool nesterov, bool first_step) {
  (device == Device::kCuda ? cuda::SgdUpdate : cpu::SgdUpdate)(
      value, grad, momentum, count, lr, weight_decay, mu, one_minus_dampening, nesterov,
      first_step);
}

inline void AdamUpdate(Device device, float* value, const float* grad, float* exp_avg,
                       float* exp_avg_sq, size_t count, float beta1, float beta2,
                       float weight_decay, float step_size, float bias_correction2_sqrt, float eps,
                       float decay, bool decoupled) {
  (device == Device::kCuda ? cuda::AdamUpdate : cpu::AdamUpdate)(
      value, grad, exp_avg, exp_avg_sq, count, beta1, beta2, weight_decay, step_size,
      bias_correction2_sqrt, eps, decay, decoupled);
}

}  // namespace ddp::ops
