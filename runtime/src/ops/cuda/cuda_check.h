// Checks a CUDA runtime or cuBLAS result: anything but success throws std::runtime_error naming
// the call and the library's message, so that the failure says what was being done.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace ddp::cuda {

inline void Check(cudaError_t result, const char* what) {
  if (result != cudaSuccess) {
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(result));
  }
}

inline void Check(cublasStatus_t result, const char* what) {
  if (result != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + " failed: " + cublasGetStatusString(result));
  }
}

// After a kernel launch: a bad configuration shows here, a fault at the next synchronization.
inline void CheckLaunch(const char* kernel) { Check(cudaGetLastError(), kernel); }

}  // namespace ddp::cuda
