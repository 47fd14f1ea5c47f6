// NcclCommunicator: collectives on CUDA tensors through NCCL. Each collective runs on the
// communicator's own stream, ordered after the work already queued on the caller's stream (the
// legacy default stream) by an event; its Work completes when the GPU has finished it, and its
// Wait orders the caller's stream after it without blocking the host (NcclWork).
//
// A watchdog thread watches every operation in flight and ncclCommGetAsyncError. On an NCCL error
// or an operation running past the timeout it aborts the communicator (so no kernel waits
// forever), fails every pending operation with a message naming the operation, its size and how
// long it ran, and ends the worker (exit status 1) as PyTorch's async error handling does, so
// that ddprun restarts the job.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "comm/nccl/nccl_work.h"
#include "ddp/communicator.h"
#include "ddp/store.h"
#include "ddprun/base/thread_annotations.h"

namespace ddp::nccl {

struct NcclCommunicatorOptions {
  int rank = 0;
  int world_size = 1;
  int device = 0;                              // the CUDA device of this rank
  std::chrono::milliseconds timeout{600'000};  // per collective, and to initialize
  bool exit_on_failure = true;                 // end the process when the watchdog fires
};

class NcclCommunicator final : public Communicator {
 public:
  static ddprun::Result<std::unique_ptr<NcclCommunicator>> Connect(
      Store& store, const NcclCommunicatorOptions& options);
  ~NcclCommunicator() override;

  int rank() const override { return options_.rank; }
  int world_size() const override { return options_.world_size; }
  std::string backend_name() const override { return "nccl"; }

  std::shared_ptr<Work> AllReduceAsync(TensorView tensor, ReduceOp op) override;
  std::shared_ptr<Work> BroadcastAsync(TensorView tensor, int root) override;
  std::shared_ptr<Work> AllGatherAsync(TensorView input, TensorView output) override;
  std::shared_ptr<Work> ReduceScatterAsync(TensorView input, TensorView output,
                                           ReduceOp op) override;
  std::shared_ptr<Work> BarrierAsync() override;

 private:
  struct InFlight {
    std::string description;
    std::chrono::steady_clock::time_point started;
    std::shared_ptr<NcclWork> work;
  };

  NcclCommunicator(NcclCommunicatorOptions options, ncclComm_t comm, cudaStream_t stream,
                   void* barrier_buffer);
  // Orders the communication stream after the caller's, runs `launch` on it, and tracks it.
  std::shared_ptr<Work> Launch(std::string description,
                               const std::function<ncclResult_t(cudaStream_t)>& launch);
  void Watchdog();
  void Fail(const std::string& message);

  const NcclCommunicatorOptions options_;
  ncclComm_t comm_;  // freed by ncclCommAbort once broken_ is set: not to be used after that
  cudaStream_t stream_;
  void* barrier_buffer_;  // one float on the device

  ddprun::Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<InFlight> in_flight_ GUARDED_BY(mu_);  // oldest first
  ddprun::Status broken_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace ddp::nccl
