// ddp::DeviceArray<T>: an owned array of T on the CPU or on the current CUDA device, the storage
// of matrices, parameters, gradient buckets and optimizer state. Copying copies the data, on the
// same device. Element access through operator[] and iteration are for CPU arrays only; for CUDA
// arrays use data() with a kernel, or ToHost().
//
// CUDA arrays are allocated on the device current for the calling thread, and copies run on the
// legacy default stream (the stream layers compute on), so they are ordered with that work.
// Failures (no CUDA in this build, out of device memory, a CUDA call that fails) throw, as the
// standard containers do: std::bad_alloc, or std::runtime_error naming the call. This is the one
// place where the runtime throws; its functions that return a Status or a Result catch these at
// their boundary (src/device_errors.h), so errors reach their callers as values.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "ddp/tensor.h"

namespace ddp {
namespace device_memory {

// The byte-level operations DeviceArray is built on (device_memory.cc; CUDA in cuda/).
void* Allocate(size_t bytes, Device device);
void Free(void* data, Device device);
// Copies `bytes` between any two devices; returns once the copy is done.
void Copy(void* destination, Device to, const void* source, Device from, size_t bytes);
void Zero(void* data, size_t bytes, Device device);

}  // namespace device_memory

template <typename T>
class DeviceArray {
  static_assert(std::is_trivially_copyable_v<T>, "DeviceArray holds plain values");

 public:
  DeviceArray() = default;
  explicit DeviceArray(size_t size, T fill = T{}, Device device = Device::kCpu)
      : DeviceArray(Uninitialized(size, device)) {
    if (fill == T{}) {
      device_memory::Zero(data_, bytes(), device_);
    } else if (device_ == Device::kCpu) {
      for (size_t i = 0; i < size_; ++i) data_[i] = fill;
    } else {
      std::vector<T> staged(size_, fill);
      device_memory::Copy(data_, device_, staged.data(), Device::kCpu, bytes());
    }
  }
  DeviceArray(std::initializer_list<T> values) : DeviceArray(std::vector<T>(values)) {}
  // A CPU array holding `values`.
  explicit DeviceArray(const std::vector<T>& values)
      : DeviceArray(Uninitialized(values.size(), Device::kCpu)) {
    device_memory::Copy(data_, device_, values.data(), Device::kCpu, bytes());
  }
  DeviceArray(const DeviceArray& other) : DeviceArray(other.To(other.device_)) {}
  DeviceArray(DeviceArray&& other) noexcept { Swap(other); }
  DeviceArray& operator=(const DeviceArray& other) {
    if (this != &other) *this = other.To(other.device_);
    return *this;
  }
  DeviceArray& operator=(DeviceArray&& other) noexcept {
    DeviceArray discarded(std::move(other));
    Swap(discarded);
    return *this;
  }
  ~DeviceArray() { device_memory::Free(data_, device_); }

  // `size` elements whose contents are undefined: for outputs about to be overwritten whole.
  static DeviceArray Uninitialized(size_t size, Device device) {
    DeviceArray array;
    array.data_ = static_cast<T*>(device_memory::Allocate(size * sizeof(T), device));
    array.size_ = size;
    array.device_ = device;
    return array;
  }

  // A copy of this array on `device`.
  DeviceArray To(Device device) const {
    DeviceArray copy = Uninitialized(size_, device);
    device_memory::Copy(copy.data_, device, data_, device_, bytes());
    return copy;
  }
  std::vector<T> ToHost() const {
    std::vector<T> values(size_);
    device_memory::Copy(values.data(), Device::kCpu, data_, device_, bytes());
    return values;
  }
  // Overwrites every element with `values` (which must have size() elements), on any device.
  void CopyFromHost(const T* values) {
    device_memory::Copy(data_, device_, values, Device::kCpu, bytes());
  }
  void SetZero() { device_memory::Zero(data_, bytes(), device_); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }
  bool empty() const { return size_ == 0; }
  Device device() const { return device_; }

  // CPU arrays only.
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

 private:
  void Swap(DeviceArray& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(device_, other.device_);
  }

  T* data_ = nullptr;
  size_t size_ = 0;
  Device device_ = Device::kCpu;
};

using FloatArray = DeviceArray<float>;

}  // namespace ddp
