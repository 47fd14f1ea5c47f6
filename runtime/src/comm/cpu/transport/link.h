// The two directions of a ring connection, whatever carries them (TCP between hosts, shared
// memory on one host): a rank sends to its next rank and receives from its previous one.
//
// Contract of both: a call blocks until done, the deadline passes (DEADLINE_EXCEEDED), or the
// link fails (UNAVAILABLE: the peer closed, died or reset; the message says which peer). After a
// failure the link is unusable. Close() may be called from any thread, at any time: it makes
// pending and later calls on either end fail at once. One thread sends, one thread receives.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "ddprun/base/status.h"

namespace ddp::cpu {

using Deadline = std::chrono::steady_clock::time_point;

class SendLink {
 public:
  virtual ~SendLink() = default;
  virtual ddprun::Status Send(const void* data, size_t bytes, Deadline deadline) = 0;
  virtual void Close() = 0;
};

class RecvLink {
 public:
  // Called with the message's bytes in order, in pieces whose sizes are multiples of 8 bytes
  // (except the last); the memory is valid only during the call.
  using Consumer = std::function<void(const std::byte* data, size_t bytes)>;

  virtual ~RecvLink() = default;
  // Receives one message of exactly `bytes` bytes (the sender sent the same size).
  virtual ddprun::Status Receive(size_t bytes, Deadline deadline, const Consumer& consume) = 0;
  virtual void Close() = 0;
};

}  // namespace ddp::cpu
