// CaptureExitFailure, CaptureHangFailure and CaptureSpawnFailure; see failure_capture.h.
#include "failure_capture.h"

#include <sys/wait.h>

#include <chrono>

#include "ddprun/base/files.h"

namespace ddprun {
namespace {

WorkerFailure Observed(const FailedWorker& worker) {
  WorkerFailure failure;
  failure.time = std::chrono::system_clock::now();
  failure.host = worker.host;
  failure.global_rank = worker.placement.global_rank;
  failure.local_rank = worker.placement.local_rank;
  failure.pid = worker.pid;
  failure.error_file = worker.error_file;
  return failure;
}

}  // namespace

WorkerFailure CaptureExitFailure(const FailedWorker& worker, int wait_status) {
  WorkerFailure failure = Observed(worker);
  if (WIFSIGNALED(wait_status)) {
    failure.term_signal = WTERMSIG(wait_status);
  } else {
    failure.exit_code = WEXITSTATUS(wait_status);
  }
  // Nothing written (no file) is the common case, not an error.
  failure.error_file_text = ReadFileHead(worker.error_file, kErrorFileLimit).value_or("");
  return failure;
}

WorkerFailure CaptureHangFailure(const FailedWorker& worker, const std::string& stall,
                                 const std::string& stacks_file, const std::string& excerpt) {
  WorkerFailure failure = Observed(worker);
  failure.hang = stall;
  failure.stacks_file = stacks_file;
  failure.stacks_excerpt = excerpt;
  return failure;
}

WorkerFailure CaptureSpawnFailure(const FailedWorker& worker, const Status& error) {
  WorkerFailure failure = Observed(worker);
  failure.spawn_error = error.message();
  return failure;
}

}  // namespace ddprun
