// The kernels of layers and losses; see cuda_ops.h. Losses reduce deterministically: fixed
// blocks write partial sums that the host adds in order, so the same inputs give the same loss.
#include <cuda_runtime.h>

#include <vector>

#include "ddp/device_array.h"
#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 1024;

int BlocksFor(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < kMaxBlocks ? (blocks == 0 ? 1 : blocks) : kMaxBlocks);
}

// Grid-stride loops: any count fits a bounded grid.
#define DDP_FOR_EACH(i, count)                                                \
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < (count); \
       i += size_t{gridDim.x} * blockDim.x)

__global__ void FillRowsKernel(float* output, const float* bias, size_t rows, size_t cols) {
  DDP_FOR_EACH(i, rows * cols) { output[i] = bias[i % cols]; }
}

__global__ void ColumnSumsKernel(float* sums, const float* matrix, size_t rows, size_t cols) {
  DDP_FOR_EACH(c, cols) {
    float sum = 0;
    for (size_t r = 0; r < rows; ++r) sum += matrix[r * cols + c];
    sums[c] += sum;
  }
}

__global__ void ReluKernel(float* output, const float* input, size_t count) {
  DDP_FOR_EACH(i, count) { output[i] = input[i] > 0.0f ? input[i] : 0.0f; }
}

__global__ void ReluBackwardKernel(float* grad_input, const float* grad_output, const float* input,
                                   size_t count) {
  DDP_FOR_EACH(i, count) { grad_input[i] = input[i] <= 0.0f ? 0.0f : grad_output[i]; }
}

// grad = 2 d / count; partial[block] = the block's sum of d^2.
__global__ void MseKernel(const float* prediction, const float* target, float* grad, size_t count,
                          double* partial) {
  __shared__ double sums[kThreads];
  double sum = 0;
  DDP_FOR_EACH(i, count) {
    const float d = prediction[i] - target[i];
    sum += static_cast<double>(d) * d;
    grad[i] = 2.0f * d / static_cast<float>(count);
  }
  sums[threadIdx.x] = sum;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) sums[threadIdx.x] += sums[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = sums[0];
}

// One thread per row; row_loss[r] = -log softmax(row)[target].
__global__ void CrossEntropyKernel(const float* logits, const int64_t* targets, float* grad,
                                   size_t rows, size_t cols, double* row_loss) {
  DDP_FOR_EACH(r, rows) {
    const float* row = logits + r * cols;
    float top = row[0];
    for (size_t c = 1; c < cols; ++c) top = fmaxf(top, row[c]);
    double denominator = 0;
    for (size_t c = 0; c < cols; ++c) denominator += exp(static_cast<double>(row[c] - top));
    const double log_denominator = log(denominator) + top;
    row_loss[r] = log_denominator - row[targets[r]];
    for (size_t c = 0; c < cols; ++c) {
      const double p = exp(row[c] - log_denominator);
      grad[r * cols + c] = static_cast<float>(
          (p - (static_cast<int64_t>(c) == targets[r] ? 1.0 : 0.0)) / static_cast<double>(rows));
    }
  }
}

double SumOnHost(const DeviceArray<double>& values) {
  double sum = 0;
  for (double v : values.ToHost()) sum += v;
  return sum;
}

}  // namespace

void FillRows(float* output, const float* bias, size_t rows, size_t cols) {
  FillRowsKernel<<<BlocksFor(rows * cols), kThreads>>>(output, bias, rows, cols);
  CheckLaunch("FillRowsKernel");
}

void AccumulateColumnSums(float* sums, const float* matrix, size_t rows, size_t cols) {
  ColumnSumsKernel<<<BlocksFor(cols), kThreads>>>(sums, matrix, rows, cols);
  CheckLaunch("ColumnSumsKernel");
}

void Relu(float* output, const float* input, size_t count) {
  ReluKernel<<<BlocksFor(count), kThreads>>>(output, input, count);
  CheckLaunch("ReluKernel");
}

void ReluBackward(float* grad_input, const float* grad_output, const float* input, size_t count) {
  ReluBackwardKernel<<<BlocksFor(count), kThreads>>>(grad_input, grad_output, input, count);
  CheckLaunch("ReluBackwardKernel");
}

float MseLoss(const float* prediction, const float* target, float* grad, size_t count) {
  const int blocks = BlocksFor(count);
  DeviceArray<double> partial(static_cast<size_t>(blocks), 0.0, Device::kCuda);
  MseKernel<<<blocks, kThreads>>>(prediction, target, grad, count, partial.data());
  CheckLaunch("MseKernel");
  return static_cast<float>(SumOnHost(partial) / static_cast<double>(count));
}

float CrossEntropyLoss(const float* logits, const int64_t* targets, float* grad, size_t rows,
                       size_t cols) {
  DeviceArray<int64_t> device_targets =
      DeviceArray<int64_t>(std::vector<int64_t>(targets, targets + rows)).To(Device::kCuda);
  DeviceArray<double> row_loss(rows, 0.0, Device::kCuda);
  CrossEntropyKernel<<<BlocksFor(rows), kThreads>>>(logits, device_targets.data(), grad, rows, cols,
                                                    row_loss.data());
  CheckLaunch("CrossEntropyKernel");
  return static_cast<float>(SumOnHost(row_loss) / static_cast<double>(rows));
}

}  // namespace ddp::cuda
