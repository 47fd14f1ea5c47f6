// The CPU side of the runtime's layers, losses and optimizers: the same operations, with the same
// contracts, as ops/cuda/cuda_ops.h, on host memory. Matrix products through OpenBLAS.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ddp::cpu {

void Gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc);
void FillRows(float* output, const float* bias, size_t rows, size_t cols);
void AccumulateColumnSums(float* sums, const float* matrix, size_t rows, size_t cols);
void Relu(float* output, const float* input, size_t count);
void ReluBackward(float* grad_input, const float* grad_output, const float* input, size_t count);
float MseLoss(const float* prediction, const float* target, float* grad, size_t count);
float CrossEntropyLoss(const float* logits, const int64_t* targets, float* grad, size_t rows,
                       size_t cols);
void SgdUpdate(float* value, const float* grad, float* momentum, size_t count, float lr,
               float weight_decay, float mu, float one_minus_dampening, bool nesterov,
               bool first_step);
void AdamUpdate(float* value, const float* grad, float* exp_avg, float* exp_avg_sq, size_t count,
                float beta1, float beta2, float weight_decay, float step_size,
                float bias_correction2_sqrt, float eps, float decay, bool decoupled);

}  // namespace ddp::cpu
