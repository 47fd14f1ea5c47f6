// DeviceArray's byte-level operations; see device_array.h. CPU memory here, CUDA memory in
// ops/cuda.
#include <cstdlib>
#include <cstring>
#include <new>

#include "ddp/device_array.h"
#include "ops/cuda/cuda_ops.h"

namespace ddp::device_memory {

void* Allocate(size_t bytes, Device device) {
  if (bytes == 0) return nullptr;
  if (device == Device::kCuda) return cuda::Allocate(bytes);
  // 64-byte alignment: whole cache lines for the vectorized loops and BLAS.
  void* data = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (data == nullptr) throw std::bad_alloc();
  return data;
}

void Free(void* data, Device device) {
  if (data == nullptr) return;
  if (device == Device::kCuda) {
    cuda::Free(data);
  } else {
    std::free(data);
  }
}

void Copy(void* destination, Device to, const void* source, Device from, size_t bytes) {
  if (bytes == 0) return;
  if (to == Device::kCpu && from == Device::kCpu) {
    std::memcpy(destination, source, bytes);
  } else if (to == Device::kCuda && from == Device::kCuda) {
    cuda::Copy(destination, source, bytes, cuda::CopyKind::kDeviceToDevice);
  } else {
    cuda::Copy(destination, source, bytes,
               to == Device::kCuda ? cuda::CopyKind::kHostToDevice : cuda::CopyKind::kDeviceToHost);
  }
}

void Zero(void* data, size_t bytes, Device device) {
  if (bytes == 0) return;
  if (device == Device::kCuda) {
    cuda::Zero(data, bytes);
  } else {
    std::memset(data, 0, bytes);
  }
}

}  // namespace ddp::device_memory
