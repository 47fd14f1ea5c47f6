// The data a collective works on: a typed view of memory the caller owns (no ownership, no
// allocation), on the CPU or on a CUDA device, and the reductions collectives apply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ddp {

enum class DataType { kFloat32, kFloat64, kInt32, kInt64, kFloat16, kBFloat16 };
enum class ReduceOp { kSum, kAvg, kMin, kMax };
enum class Device { kCpu, kCuda };

// How many CUDA devices this process sees: 0 in a build without CUDA, or with no GPU. Never fails.
int CudaDeviceCount();

// Bytes of one element.
size_t SizeOf(DataType type);
const char* NameOf(DataType type);  // "float32", ...
const char* NameOf(ReduceOp op);    // "sum", ...

// `count` elements of `type` at `data`. The memory must stay valid, and must not be touched by
// the caller, until the operation using it has completed (its Work is done).
struct TensorView {
  void* data = nullptr;
  size_t count = 0;
  DataType type = DataType::kFloat32;
  Device device = Device::kCpu;
  int device_index = 0;  // the CUDA device, for Device::kCuda

  size_t bytes() const { return count * SizeOf(type); }
};

template <typename T>
DataType DataTypeOf();
template <>
inline DataType DataTypeOf<float>() {
  return DataType::kFloat32;
}
template <>
inline DataType DataTypeOf<double>() {
  return DataType::kFloat64;
}
template <>
inline DataType DataTypeOf<int32_t>() {
  return DataType::kInt32;
}
template <>
inline DataType DataTypeOf<int64_t>() {
  return DataType::kInt64;
}

// A view of `count` elements of a CPU array of float, double, int32_t or int64_t.
template <typename T>
TensorView CpuTensor(T* data, size_t count) {
  return TensorView{data, count, DataTypeOf<T>(), Device::kCpu, 0};
}

}  // namespace ddp
