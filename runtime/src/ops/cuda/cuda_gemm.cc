// The matrix product through cuBLAS; see cuda_ops.h.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <map>

#include "ops/cuda/cuda_check.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp::cuda {
namespace {

// One cuBLAS handle per thread and device, made on first use and kept for the thread's life.
cublasHandle_t Handle() {
  thread_local std::map<int, cublasHandle_t> handles;
  const int device = CurrentDevice();
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasHandle_t handle = nullptr;
  Check(cublasCreate(&handle), "cublasCreate");
  Check(cublasSetStream(handle, cudaStreamLegacy), "cublasSetStream");
  handles.emplace(device, handle);
  return handle;
}

}  // namespace

void Gemm(bool transpose_a, bool transpose_b, int m, int n, int k, float alpha, const float* a,
          int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  // cuBLAS is column-major: a row-major matrix is its transpose there, so row-major
  // C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: the operands swap, the flags stay.
  Check(cublasSgemm(Handle(), transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                    transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b, ldb, a, lda, &beta,
                    c, ldc),
        "cublasSgemm");
}

}  // namespace ddp::cuda
