// Device memory: allocation (with freed blocks kept for reuse) and copies; see cuda_ops.h.
#include <cuda_runtime.h>

#include <map>
#include <string>
#include <unordered_map>

#include "ddprun/base/thread_annotations.h"
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

namespace {

// Freed device memory kept for reuse. cudaMalloc is slow, and cudaFree waits for the whole device:
// layers allocate their outputs on every step, so freeing for real would stall every step (and
// the all-reduces overlapping backward with it). A freed block is reused for an allocation of the
// same size on the same device. That is safe because the runtime's work on such blocks runs on the
// legacy default stream in issue order, so the block's next user runs after its last one; NCCL's
// stream uses a block only inside a collective, and the legacy stream waits for the collective
// (Work::Wait) before anything issued after it.
class BlockCache {
 public:
  void* Allocate(size_t bytes) {
    const int device = CurrentDevice();
    {
      ddprun::MutexLock lock(mu_);
      auto it = free_.find({device, bytes});
      if (it != free_.end()) {
        void* data = it->second;
        free_.erase(it);
        live_[data] = {device, bytes};
        return data;
      }
    }
    void* data = nullptr;
    if (cudaMalloc(&data, bytes) != cudaSuccess) {
      cudaGetLastError();  // clear it: the retry decides
      ReleaseCached();
      Check(cudaMalloc(&data, bytes),
            ("cudaMalloc of " + std::to_string(bytes) + " bytes").c_str());
    }
    ddprun::MutexLock lock(mu_);
    live_[data] = {device, bytes};
    return data;
  }

  void Free(void* data) {
    ddprun::MutexLock lock(mu_);
    auto it = live_.find(data);
    if (it == live_.end()) return;  // not ours: nothing to do
    free_.emplace(it->second, data);
    live_.erase(it);
  }

 private:
  using Key = std::pair<int, size_t>;  // device, bytes

  // Gives every cached block back to CUDA (when it has run out of memory). Every block is tried
  // and the current device is restored before the first failure, if any, is thrown.
  void ReleaseCached() {
    std::multimap<Key, void*> cached;
    {
      ddprun::MutexLock lock(mu_);
      cached.swap(free_);
    }
    const int current = CurrentDevice();
    cudaError_t first_error = cudaSuccess;
    std::string failed;
    for (const auto& [key, data] : cached) {
      cudaError_t result = cudaSetDevice(key.first);
      const bool device_set = result == cudaSuccess;
      if (device_set) result = cudaFree(data);
      if (result != cudaSuccess && first_error == cudaSuccess) {
        first_error = result;
        failed = device_set ? "cudaFree of a cached block of " + std::to_string(key.second) +
                                  " bytes on device " + std::to_string(key.first)
                            : "cudaSetDevice(" + std::to_string(key.first) + ")";
      }
    }
    const std::string restore =
        "cudaSetDevice(" + std::to_string(current) + ") after freeing the cached blocks";
    Check(cudaSetDevice(current), restore.c_str());
    Check(first_error, failed.c_str());
  }

  ddprun::Mutex mu_;
  std::multimap<Key, void*> free_ GUARDED_BY(mu_);
  std::unordered_map<void*, Key> live_ GUARDED_BY(mu_);
};

// Never destroyed: blocks still cached at exit go back with the process, and a destructor would
// run after CUDA's own teardown.
BlockCache& Cache() {
  static auto* cache = new BlockCache;
  return *cache;
}

}  // namespace

void* Allocate(size_t bytes) { return Cache().Allocate(bytes); }

void Free(void* data) { Cache().Free(data); }

void Copy(void* destination, const void* source, size_t bytes, CopyKind kind) {
  const cudaMemcpyKind direction = kind == CopyKind::kHostToDevice   ? cudaMemcpyHostToDevice
                                   : kind == CopyKind::kDeviceToHost ? cudaMemcpyDeviceToHost
                                                                     : cudaMemcpyDeviceToDevice;
  // On the legacy default stream: ordered after the kernels that wrote `source`.
  Check(cudaMemcpy(destination, source, bytes, direction), "cudaMemcpy");
}

void Zero(void* data, size_t bytes) {
  Check(cudaMemsetAsync(data, 0, bytes, cudaStreamLegacy), "cudaMemsetAsync");
}

}  // namespace ddp::cuda
