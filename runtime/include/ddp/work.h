// ddp::Work: the handle of an asynchronous collective. Operations of one communicator complete in
// the order they were issued. Thread-safe: any thread may wait on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <optional>

#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"

namespace ddp {

class Work {
 public:
  static constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();
  // Every Work is one collective started; Complete counts it finished (ddp/progress.h).
  Work();
  virtual ~Work() = default;

  // Blocks until the operation has completed, then returns its result: OK, or the error that
  // failed it (a peer gone, a timeout, a broken communicator). DEADLINE_EXCEEDED if `timeout`
  // passes first; the operation itself goes on.
  //
  // Collectives on CUDA tensors (NCCL) do as PyTorch's work.wait() does there: the host does not
  // block; the legacy default stream (where layers, copies and optimizers run) is made to wait
  // for the operation, so everything issued on it afterwards sees the result. The result is the
  // error if the operation has already failed, OK otherwise; a later failure ends the worker
  // (the communicator's watchdog).
  virtual ddprun::Status Wait(std::chrono::milliseconds timeout = kForever);
  // Whether the operation has completed (successfully or not). Never blocks.
  bool Done() const;

  // For communicators: records the result and wakes every waiter. Called once.
  void Complete(ddprun::Status status);

 private:
  mutable ddprun::Mutex mu_;
  std::condition_variable_any done_cv_;
  std::optional<ddprun::Status> result_ GUARDED_BY(mu_);
};

}  // namespace ddp
