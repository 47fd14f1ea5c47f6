// The CUDA side of the runtime's tensors, layers and optimizers: device memory, cuBLAS matrix
// products and the small kernels that layers, losses and optimizers need. Pointers are device
// pointers on the calling thread's current device; everything runs on the legacy default stream,
// in issue order, so results are ready for the next call on that stream (and for NCCL, which
// orders its own stream after it). Functions that return a value to the host wait for it.
//
// Implemented in the .cu/.cc files beside this one when CUDA is found, and by
// cuda_unavailable.cc otherwise, where every function throws: a build without CUDA cannot create
// a CUDA array, so none of these is reached there. Failures throw std::runtime_error naming the
// call and CUDA's message.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ddp::cuda {

// The number of devices visible (0 when CUDA reports an error, such as no driver). Never throws;
// cuda_unavailable.cc returns 0.
int DeviceCount();
// The current device's index.
int CurrentDevice();

// Device memory on the current device. Freed blocks are kept and reused for allocations of the
// same size (cudaFree would wait for the whole device); when CUDA runs out, they are given back
// and the allocation tried again.
void* Allocate(size_t bytes);
void Free(void* data);
enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };
// Returns once done.
void Copy(void* destination, const void* source, size_t bytes, CopyKind kind);
void Zero(void* data, size_t bytes);

// Row-major C (m x n) = alpha * op(A) (m x k) * op(B) (k x n) + beta * C, as cblas_sgemm with
// CblasRowMajor (leading dimensions as there).
void Gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc);

// Every row of `output` (rows x cols) = `bias` (cols).
void FillRows(float* output, const float* bias, size_t rows, size_t cols);
// sums[c] += sum over rows of matrix[r][c].
void AccumulateColumnSums(float* sums, const float* matrix, size_t rows, size_t cols);
// output = max(input, 0).
void Relu(float* output, const float* input, size_t count);
// grad_input = 0 where input <= 0, else grad_output (PyTorch's threshold_backward).
void ReluBackward(float* grad_input, const float* grad_output, const float* input, size_t count);
// grad = 2 (prediction - target) / count; returns mean((prediction - target)^2).
float MseLoss(const float* prediction, const float* target, float* grad, size_t count);
// `targets` (rows class indices) on the host. grad = (softmax - one_hot) / rows; returns the mean
// of -log softmax[target].
float CrossEntropyLoss(const float* logits, const int64_t* targets, float* grad, size_t rows,
                       size_t cols);

// One torch.optim.SGD step of one parameter (the formula is in ops/cpu/cpu_ops.cc).
void SgdUpdate(float* value, const float* grad, float* momentum, size_t count, float lr,
               float weight_decay, float mu, float one_minus_dampening, bool nesterov,
               bool first_step);
// One torch.optim.Adam / AdamW step of one parameter (the formula is in ops/cpu/cpu_ops.cc).
void AdamUpdate(float* value, const float* grad, float* exp_avg, float* exp_avg_sq, size_t count,
                float beta1, float beta2, float weight_decay, float step_size,
                float bias_correction2_sqrt, float eps, float decay, bool decoupled);

}  // namespace ddp::cuda
