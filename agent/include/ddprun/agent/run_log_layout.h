// RunLogLayout: where a run's per-worker files live:
//   <log_dir>/<run_id>/attempt_<n>/<local_rank>/{stdout.log,stderr.log,error.json,progress}
// (torchrun's layout; torchrun adds a random suffix to <run_id>). A run never deletes or
// overwrites an earlier run's logs: where <log_dir>/<run_id> exists, the run claims
// <run_id>.1, <run_id>.2, ... instead.
//
// A temporary directory that holds only error and progress files (no --log_dir, no logs, no
// hang detection) is flat: <dir>/attempt_<n>.<local_rank>.{error.json,progress}. One directory to
// make and remove instead of 2 + N per attempt, where removing a directory can wait for the
// disk (ext4 discards a directory's block as it is removed). Not thread-safe.
#pragma once

#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

class RunLogLayout {
 public:
  // Creates <log_dir> (and its parents) and a run directory no other run has: <run_id>, or the
  // first of <run_id>.1, <run_id>.2, ... that does not exist (mkdir decides, so two runs at once
  // never share one).
  static Result<RunLogLayout> Claim(const std::string& log_dir, const std::string& run_id);
  // The flat layout in `dir`, a directory that exists.
  static RunLogLayout Flat(std::string dir);
  // Over a run directory claimed before; empty: none (PrepareWorkerDir fails).
  explicit RunLogLayout(std::string run_dir, bool renamed = false)
      : run_dir_(std::move(run_dir)), renamed_(renamed) {}

  // The directory claimed, and whether it is not <log_dir>/<run_id> (that one held an earlier
  // run's logs).
  const std::string& run_dir() const { return run_dir_; }
  bool renamed() const { return renamed_; }

  bool flat() const { return flat_; }

  // The worker's own directory; in the flat layout, the run's (no logs or stacks go there).
  std::string WorkerDir(int attempt, int local_rank) const;
  std::string StdoutLog(int attempt, int local_rank) const;
  std::string StderrLog(int attempt, int local_rank) const;
  std::string ErrorFile(int attempt, int local_rank) const;
  std::string ProgressFile(int attempt, int local_rank) const;

  // Creates the worker's directory (and its parents); nothing in the flat layout.
  Status PrepareWorkerDir(int attempt, int local_rank) const;

 private:
  // The name of one of the worker's files.
  std::string WorkerFile(int attempt, int local_rank, const char* name) const;

  std::string run_dir_;
  bool renamed_;
  bool flat_ = false;
};

}  // namespace ddprun
