// ddp::Work: the handle of an asynchronous collective. Operations of one communicator complete in
// the order they were issued. Thread-safe: any thread may wait on it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "ddprun/status.h"

namespace ddp {

class Work {
 public:
  static constexpr std::chrono::milliseconds kForever = std::chrono::milliseconds::max();

  // Blocks until the operation has completed, then returns its result: OK, or the error that
  // failed it (a peer gone, a timeout, a broken communicator). DEADLINE_EXCEEDED if `timeout`
  // passes first; the operation itself goes on.
  ddprun::Status Wait(std::chrono::milliseconds timeout = kForever);
  // Whether the operation has completed (successfully or not). Never blocks.
  bool Done() const;

  // For communicators: records the result and wakes every waiter. Called once.
  void Complete(ddprun::Status status);

 private:
  mutable std::mutex mu_;
  std::condition_variable done_cv_;
  std::optional<ddprun::Status> result_;  // guarded by mu_
};

}  // namespace ddp
