// RestartPolicy: decides, at each worker-group failure, whether the group is restarted.
// `max_restarts` counts failures, as torchrun's --max-restarts does: with max_restarts = 2 the
// group runs at most three times. Not thread-safe; owned by the supervisor's loop.
#pragma once

namespace ddprun {

class RestartPolicy {
 public:
  enum class Decision { kRestart, kGiveUp };

  explicit RestartPolicy(int max_restarts) : max_restarts_(max_restarts) {}

  // Records a failure of the group; kRestart spends one restart.
  Decision OnGroupFailure() {
    if (restarts_used_ >= max_restarts_) return Decision::kGiveUp;
    ++restarts_used_;
    return Decision::kRestart;
  }

  int restarts_used() const { return restarts_used_; }
  int restarts_left() const { return max_restarts_ - restarts_used_; }
  int max_restarts() const { return max_restarts_; }

 private:
  const int max_restarts_;
  int restarts_used_ = 0;
};

}  // namespace ddprun
