// ddp::Communicator: the collectives of one process group, whatever the backend (the CPU ring
// over TCP and shared memory, or NCCL). Every rank must issue the same collectives, with the same
// sizes and types, in the same order.
//
// Each collective has an asynchronous form, returning a Work handle at once, and a blocking form
// that waits for it. Asynchronous operations complete in the order they were issued. After an
// error (a peer died or disconnected, an operation timed out) the communicator is broken: every
// pending and later operation fails with that error, so the worker can exit and ddprun restart
// the job.
//
// Methods may be called from any thread, but the order of issue is the order of calls: a program
// that issues from several threads must order them itself.
#pragma once

#include <memory>
#include <string>

#include "ddp/registered_buffer.h"
#include "ddp/tensor.h"
#include "ddp/work.h"

namespace ddp {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  virtual std::string backend_name() const = 0;  // "cpu" or "nccl"

  // Reduces `tensor` over every rank, in place: every rank ends with the same bits.
  virtual std::shared_ptr<Work> AllReduceAsync(TensorView tensor, ReduceOp op) = 0;
  // Copies root's `tensor` to every rank's `tensor`.
  virtual std::shared_ptr<Work> BroadcastAsync(TensorView tensor, int root) = 0;
  // `output` (world_size x input.count) receives every rank's `input`, in rank order.
  virtual std::shared_ptr<Work> AllGatherAsync(TensorView input, TensorView output) = 0;
  // Reduces `input` (world_size x output.count) over every rank; rank r receives block r.
  virtual std::shared_ptr<Work> ReduceScatterAsync(TensorView input, TensorView output,
                                                   ReduceOp op) = 0;
  // Completes once every rank has issued it.
  virtual std::shared_ptr<Work> BarrierAsync() = 0;

  // `bytes` bytes for tensors whose collectives need no copy (see registered_buffer.h). A
  // collective itself: every rank calls it, with the same size, in the same order as its other
  // collectives; blocks until done. A collective uses the buffer directly when its tensor lies
  // in one such buffer; every rank's tensor must then lie in it at the same offset (otherwise
  // the collective fails with INVALID_ARGUMENT on the rank that finds out, saying which rank did
  // what, and the others fail with it). When the memory cannot be shared (ranks on several
  // hosts, /dev/shm full, this backend) every rank gets ordinary memory, and says why in its
  // log. An error only when the communicator is broken. This default gives ordinary
  // memory.
  virtual ddprun::Result<std::shared_ptr<RegisteredBuffer>> AllocateShared(size_t bytes);

  // The blocking forms: issue, then wait.
  ddprun::Status AllReduce(TensorView tensor, ReduceOp op) {
    return AllReduceAsync(tensor, op)->Wait();
  }
  ddprun::Status Broadcast(TensorView tensor, int root) {
    return BroadcastAsync(tensor, root)->Wait();
  }
  ddprun::Status AllGather(TensorView input, TensorView output) {
    return AllGatherAsync(input, output)->Wait();
  }
  ddprun::Status ReduceScatter(TensorView input, TensorView output, ReduceOp op) {
    return ReduceScatterAsync(input, output, op)->Wait();
  }
  ddprun::Status Barrier() { return BarrierAsync()->Wait(); }
};

}  // namespace ddp
