// Capturing a worker's failure the moment the supervisor sees it: when, where, which rank and
// process, how it ended (exit code or signal), and what it wrote to its error file
// (TORCHELASTIC_ERROR_FILE), read before the next attempt can overwrite it. Pure, apart from
// reading the error file.
#pragma once

#include <sys/types.h>

#include <string>

#include "ddprun/agent/failure_report.h"
#include "ddprun/agent/worker_environment.h"
#include "ddprun/base/status.h"

namespace ddprun {

// What the supervisor knows of one worker when it fails.
struct FailedWorker {
  WorkerPlacement placement;
  pid_t pid = -1;
  std::string error_file;
  std::string host;  // this node, as the report names it
};

// Error files are read up to this size; a larger one is cut.
inline constexpr size_t kErrorFileLimit = 64 << 10;

// The worker exited with `wait_status` (from waitpid), not by success.
WorkerFailure CaptureExitFailure(const FailedWorker& worker, int wait_status);

// The worker hung and is about to be stopped: `stall` says how (DescribeStall), and its stacks
// were saved in `stacks_file` (empty: nowhere), whose innermost frames are `excerpt`.
WorkerFailure CaptureHangFailure(const FailedWorker& worker, const std::string& stall,
                                 const std::string& stacks_file, const std::string& excerpt);

// The worker could not be started at all: `error` says why.
WorkerFailure CaptureSpawnFailure(const FailedWorker& worker, const Status& error);

}  // namespace ddprun
