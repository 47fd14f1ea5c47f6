// The optimizers' element-wise updates; see cuda_ops.h. The formulas are those of
// ops/cpu/cpu_ops.cc (PyTorch's), element for element.
#include <cuda_runtime.h>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp::cuda {
namespace {

constexpr int kThreads = 256;

int BlocksFor(size_t count) {
  const size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<int>(blocks == 0 ? 1 : (blocks < 4096 ? blocks : 4096));
}

__global__ void SgdKernel(float* value, const float* grad, float* momentum, size_t count, float lr,
                          float weight_decay, float mu, float one_minus_dampening, bool nesterov,
                          bool first_step) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    float d = grad[i];
    if (weight_decay != 0) d += weight_decay * value[i];
    if (mu != 0) {
      momentum[i] = first_step ? d : mu * momentum[i] + one_minus_dampening * d;
      d = nesterov ? d + mu * momentum[i] : momentum[i];
    }
    value[i] -= lr * d;
  }
}

__global__ void AdamKernel(float* value, const float* grad, float* exp_avg, float* exp_avg_sq,
                           size_t count, float beta1, float beta2, float weight_decay,
                           float step_size, float bias_correction2_sqrt, float eps, float decay,
                           bool decoupled) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < count;
       i += size_t{gridDim.x} * blockDim.x) {
    float g = grad[i];
    if (decoupled) {
      value[i] *= decay;
    } else if (weight_decay != 0) {
      g += weight_decay * value[i];
    }
    exp_avg[i] = beta1 * exp_avg[i] + (1 - beta1) * g;
    exp_avg_sq[i] = beta2 * exp_avg_sq[i] + (1 - beta2) * g * g;
    const float denom = sqrtf(exp_avg_sq[i]) / bias_correction2_sqrt + eps;
    value[i] -= step_size * exp_avg[i] / denom;
  }
}

}  // namespace

void SgdUpdate(float* value, const float* grad, float* momentum, size_t count, float lr,
               float weight_decay, float mu, float one_minus_dampening, bool nesterov,
               bool first_step) {
  if (count == 0) return;
  SgdKernel<<<BlocksFor(count), kThreads>>>(value, grad, momentum, count, lr, weight_decay, mu,
                                            one_minus_dampening, nesterov, first_step);
  CheckLaunch("SgdKernel");
}

void AdamUpdate(float* value, const float* grad, float* exp_avg, float* exp_avg_sq, size_t count,
                float beta1, float beta2, float weight_decay, float step_size,
                float bias_correction2_sqrt, float eps, float decay, bool decoupled) {
  if (count == 0) return;
  AdamKernel<<<BlocksFor(count), kThreads>>>(value, grad, exp_avg, exp_avg_sq, count, beta1, beta2,
                                             weight_decay, step_size, bias_correction2_sqrt, eps,
                                             decay, decoupled);
  CheckLaunch("AdamKernel");
}

}  // namespace ddp::cuda
