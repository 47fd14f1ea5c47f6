// SendQueue; see send_queue.h.
#include "send_queue.h"

namespace ddp::cpu {

SendQueue::SendQueue(SendLink& link, std::function<void(const ddprun::Status&)> on_error)
    : link_(link), on_error_(std::move(on_error)), thread_([this] { Run(); }) {}

SendQueue::~SendQueue() {
  {
    ddprun::MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  link_.Close();  // a send blocked on a stuck peer returns at once
  thread_.join();
}

SendQueue::Ticket SendQueue::Post(const void* data, size_t bytes, Deadline deadline) {
  if (bytes == 0) return 0;
  Ticket ticket;
  {
    ddprun::MutexLock lock(mu_);
    pieces_.push_back({data, bytes, deadline});
    ticket = ++posted_;
  }
  cv_.notify_all();
  return ticket;
}

void SendQueue::WaitSent(Ticket ticket) {
  ddprun::MutexLock lock(mu_);
  cv_.wait(lock, [&]() REQUIRES(mu_) { return finished_ >= ticket || stopping_; });
}

ddprun::Status SendQueue::Flush() {
  ddprun::MutexLock lock(mu_);
  cv_.wait(lock, [this]() REQUIRES(mu_) { return (pieces_.empty() && !sending_) || stopping_; });
  return error_;
}

void SendQueue::Abort(const ddprun::Status& why) {
  link_.Close();  // a send in progress stops at its next step
  ddprun::MutexLock lock(mu_);
  if (error_.ok()) error_ = why;
  finished_ += pieces_.size();
  pieces_.clear();
  cv_.notify_all();
  cv_.wait(lock, [this]() REQUIRES(mu_) { return !sending_ || stopping_; });
}

void SendQueue::Run() {
  ddprun::MutexLock lock(mu_);
  while (true) {
    cv_.wait(lock, [this]() REQUIRES(mu_) { return !pieces_.empty() || stopping_; });
    if (stopping_) return;
    const Piece piece = pieces_.front();
    pieces_.pop_front();
    if (!error_.ok()) {  // after a failure, pieces are dropped
      ++finished_;
      cv_.notify_all();
      continue;
    }
    sending_ = true;
    lock.unlock();
    ddprun::Status sent = link_.Send(piece.data, piece.bytes, piece.deadline);
    lock.lock();
    sending_ = false;
    ++finished_;
    if (!sent.ok() && error_.ok()) {
      error_ = sent;
      lock.unlock();
      on_error_(sent);
      lock.lock();
    }
    cv_.notify_all();
  }
}

}  // namespace ddp::cpu
