// NcclWork: the Work of one NCCL collective. It owns the event recorded on the communication
// stream after the collective; Wait orders the caller's stream (the legacy default stream) after
// that event and returns at once, as PyTorch's ProcessGroupNCCL work.wait() does. The watchdog
// completes it (Complete) once the event has passed, or fails it.
#pragma once

#include <cuda_runtime.h>

#include <string>

#include "ddp/work.h"
#include "ddprun/base/logging.h"

namespace ddp::nccl {

class NcclWork final : public Work {
 public:
  // Takes ownership of `done`.
  explicit NcclWork(cudaEvent_t done) : done_(done) {}
  ~NcclWork() override {
    if (cudaError_t e = cudaEventDestroy(done_); e != cudaSuccess) {
      ddprun::GetLogger("runtime")->error("cudaEventDestroy of a collective's event failed: {}",
                                          cudaGetErrorString(e));
    }
  }
  NcclWork(const NcclWork&) = delete;
  NcclWork& operator=(const NcclWork&) = delete;

  ddprun::Status Wait(std::chrono::milliseconds timeout = kForever) override {
    if (Done()) return Work::Wait(timeout);  // finished or failed: its result
    if (cudaError_t e = cudaStreamWaitEvent(cudaStreamLegacy, done_, 0); e != cudaSuccess) {
      return ddprun::InternalError(std::string("cudaStreamWaitEvent after a collective failed: ") +
                                   cudaGetErrorString(e));
    }
    return ddprun::Status::Ok();
  }

  // Whether the GPU has passed the event (the collective has finished); the CUDA error if the
  // query failed (not merely "not yet"). Never blocks.
  ddprun::Result<bool> Finished() const {
    const cudaError_t e = cudaEventQuery(done_);
    if (e == cudaSuccess) return true;
    if (e == cudaErrorNotReady) return false;
    return ddprun::InternalError(std::string("cudaEventQuery of a collective's event failed: ") +
                                 cudaGetErrorString(e));
  }

 private:
  cudaEvent_t done_;
};

}  // namespace ddp::nccl
