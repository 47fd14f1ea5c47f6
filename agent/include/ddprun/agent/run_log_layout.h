// RunLogLayout: where a run's per-worker files live:
//   <log_dir>/<run_id>/attempt_<n>/<local_rank>/{stdout.log,stderr.log,error.json}
// (torchrun's layout, without its random suffix). Not thread-safe.
#pragma once

#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

class RunLogLayout {
 public:
  RunLogLayout(std::string log_dir, std::string run_id)
      : log_dir_(std::move(log_dir)), run_id_(std::move(run_id)) {}

  std::string WorkerDir(int attempt, int local_rank) const;
  std::string StdoutLog(int attempt, int local_rank) const;
  std::string StderrLog(int attempt, int local_rank) const;
  std::string ErrorFile(int attempt, int local_rank) const;

  // Creates the worker's directory (and its parents) and removes a stale error file left by an
  // earlier run with the same run id.
  Status PrepareWorkerDir(int attempt, int local_rank) const;

  const std::string& log_dir() const { return log_dir_; }

 private:
  std::string log_dir_;
  std::string run_id_;
};

}  // namespace ddprun
