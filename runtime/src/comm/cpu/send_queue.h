// SendQueue: the thread that sends to the next rank, so that a rank sends one segment while it
// receives and reduces the next: the ring's two directions run at once. Pieces are sent in the
// order posted; the memory of a posted piece must stay unwritten until it is sent (WaitSent) or
// Flush returns.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "ddprun/base/thread_annotations.h"
#include "transport/link.h"

namespace ddp::cpu {

class SendQueue {
 public:
  // `on_error` runs (on the queue's thread) when a send fails; later pieces are dropped.
  SendQueue(SendLink& link, std::function<void(const ddprun::Status&)> on_error);
  ~SendQueue();  // stops the thread; pending pieces are dropped

  // Names one posted piece: the pieces posted so far, counting this one; 0 for an empty piece.
  using Ticket = uint64_t;

  Ticket Post(const void* data, size_t bytes, Deadline deadline);
  // Waits until the piece is sent, or dropped after a failure; then its memory may be written.
  // A piece that came back around the ring has surely left, but only this wait makes that order
  // one that the memory model (and ThreadSanitizer) can see.
  void WaitSent(Ticket ticket);
  // Waits until every posted piece is sent. The first send error, if there was one.
  ddprun::Status Flush();
  // After a failure: closes the link, drops what is queued, and returns once no send is in
  // progress, so that the caller may free the memory of pieces it posted.
  void Abort(const ddprun::Status& why);

 private:
  struct Piece {
    const void* data;
    size_t bytes;
    Deadline deadline;
  };
  void Run();

  SendLink& link_;
  std::function<void(const ddprun::Status&)> on_error_;
  ddprun::Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<Piece> pieces_ GUARDED_BY(mu_);
  bool sending_ GUARDED_BY(mu_) = false;  // a piece is being sent
  Ticket posted_ GUARDED_BY(mu_) = 0;
  Ticket finished_ GUARDED_BY(mu_) = 0;  // pieces sent or dropped, in order
  bool stopping_ GUARDED_BY(mu_) = false;
  ddprun::Status error_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace ddp::cpu
