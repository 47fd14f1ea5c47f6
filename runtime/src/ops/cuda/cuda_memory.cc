// Device memory: allocation and copies; see cuda_ops.h.
#include <cuda_runtime.h>

#include <string>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp::cuda {

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

int CurrentDevice() {
  int device = 0;
  Check(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

void* Allocate(size_t bytes) {
  void* data = nullptr;
  Check(cudaMalloc(&data, bytes), ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
  return data;
}

void Free(void* data) {
  // Not checked: a destructor must not throw, and a failed free leaves nothing to do.
  cudaFree(data);
}

void Copy(void* destination, const void* source, size_t bytes, int kind) {
  static constexpr cudaMemcpyKind kKinds[] = {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                                              cudaMemcpyDeviceToDevice};
  // On the legacy default stream: ordered after the kernels that wrote `source`.
  Check(cudaMemcpy(destination, source, bytes, kKinds[kind]), "cudaMemcpy");
}

void Zero(void* data, size_t bytes) {
  Check(cudaMemsetAsync(data, 0, bytes, cudaStreamLegacy), "cudaMemsetAsync");
}

}  // namespace ddp::cuda
