// The CUDA operations in a build without CUDA: every one throws (DeviceCount says 0). Nothing
// reaches them in such a build (a CUDA DeviceArray cannot be made: Allocate throws first), but they
// keep the dispatch in ops/ops.h free of #if.
#include <stdexcept>

#include "ops/cuda/cuda_ops.h"

namespace ddp::cuda {
namespace {

[[noreturn]] void Unavailable() {
  throw std::runtime_error(
      "CUDA tensors need a ddprun built with the CUDA toolkit; this build has none (rebuild "
      "where CUDA is installed, or use Device::kCpu)");
}

}  // namespace

int DeviceCount() { return 0; }
int CurrentDevice() { Unavailable(); }
void* Allocate(size_t) { Unavailable(); }
void Free(void*) { Unavailable(); }
void Copy(void*, const void*, size_t, CopyKind) { Unavailable(); }
void Zero(void*, size_t) { Unavailable(); }
void Gemm(bool, bool, int, int, int, float, const float*, int, const float*, int, float, float*,
          int) {
  Unavailable();
}
void FillRows(float*, const float*, size_t, size_t) { Unavailable(); }
void AccumulateColumnSums(float*, const float*, size_t, size_t) { Unavailable(); }
void Relu(float*, const float*, size_t) { Unavailable(); }
void ReluBackward(float*, const float*, const float*, size_t) { Unavailable(); }
float MseLoss(const float*, const float*, float*, size_t) { Unavailable(); }
float CrossEntropyLoss(const float*, const int64_t*, float*, size_t, size_t) { Unavailable(); }
void SgdUpdate(float*, const float*, float*, size_t, float, float, float, float, bool, bool) {
  Unavailable();
}
void AdamUpdate(float*, const float*, float*, float*, size_t, float, float, float, float, float,
                float, float, bool) {
  Unavailable();
}

}  // namespace ddp::cuda
