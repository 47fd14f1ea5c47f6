// WorkerFailure's helpers; see worker_failure.h.
#include "ddprun/base/worker_failure.h"

#include <sys/wait.h>

#include <cstring>

namespace ddprun {

bool SameFailure(const WorkerFailure& a, const WorkerFailure& b) {
  // Times travel as milliseconds: compare at that precision.
  using std::chrono::duration_cast;
  using std::chrono::milliseconds;
  return a.host == b.host && a.global_rank == b.global_rank && a.pid == b.pid &&
         duration_cast<milliseconds>(a.time.time_since_epoch()) ==
             duration_cast<milliseconds>(b.time.time_since_epoch());
}

int ExitStatusOf(const WorkerFailure& failure) {
  if (!failure.hang.empty()) return 1;  // ddprun's signals ended it: they are not its status
  if (failure.term_signal) return 128 + *failure.term_signal;
  if (failure.exit_code) return *failure.exit_code;
  return 1;  // could not be started
}

std::string DescribeExit(const WorkerFailure& failure) {
  if (!failure.hang.empty()) return "hung: " + failure.hang;
  if (failure.term_signal) {
    return "signal " + SignalName(*failure.term_signal) + " (" +
           std::to_string(*failure.term_signal) + ")";
  }
  if (failure.exit_code) return "exit code " + std::to_string(*failure.exit_code);
  return "not started";
}

std::string DescribeWaitStatus(int wait_status) {
  WorkerFailure ended;
  if (WIFSIGNALED(wait_status)) {
    ended.term_signal = WTERMSIG(wait_status);
  } else {
    ended.exit_code = WEXITSTATUS(wait_status);
  }
  return DescribeExit(ended);
}

std::string DescribeFailure(const WorkerFailure& failure) {
  const std::string where = "rank " + std::to_string(failure.global_rank) + " (local_rank " +
                            std::to_string(failure.local_rank) + ") on host " + failure.host;
  if (!failure.spawn_error.empty()) return where + ": could not start: " + failure.spawn_error;
  return where + ": " + DescribeExit(failure);
}

std::string SignalName(int signal_number) {
  if (const char* abbreviation = ::sigabbrev_np(signal_number)) {
    return std::string("SIG") + abbreviation;
  }
  return "signal " + std::to_string(signal_number);
}

}  // namespace ddprun
