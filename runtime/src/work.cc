// ddp::Work; see work.h.
#include "ddp/work.h"

#include "ddp/progress.h"

namespace ddp {

Work::Work() { progress_internal::CollectiveIssued(); }

ddprun::Status Work::Wait(std::chrono::milliseconds timeout) {
  ddprun::MutexLock lock(mu_);
  auto done = [this]() REQUIRES(mu_) { return result_.has_value(); };
  if (timeout == kForever) {
    done_cv_.wait(lock, done);
  } else if (!done_cv_.wait_for(lock, timeout, done)) {
    return ddprun::DeadlineExceededError("the collective did not complete within " +
                                         std::to_string(timeout.count()) + " ms");
  }
  return *result_;
}

bool Work::Done() const {
  ddprun::MutexLock lock(mu_);
  return result_.has_value();
}

void Work::Complete(ddprun::Status status) {
  {
    ddprun::MutexLock lock(mu_);
    if (result_) return;
    result_ = std::move(status);
  }
  progress_internal::CollectiveCompleted();
  done_cv_.notify_all();
}

}  // namespace ddp
