// RunLogLayout; see run_log_layout.h.
#include "ddprun/agent/run_log_layout.h"

#include <sys/stat.h>

#include <cerrno>

#include "ddprun/base/files.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {

Result<RunLogLayout> RunLogLayout::Claim(const std::string& log_dir, const std::string& run_id) {
  RETURN_IF_ERROR(CreateDirectories(log_dir));
  const std::string base = log_dir + "/" + run_id;
  // Bounded: a directory holding ten thousand earlier runs of one id is a mistake to report.
  for (int suffix = 0; suffix < 10'000; ++suffix) {
    const std::string candidate = suffix == 0 ? base : base + "." + std::to_string(suffix);
    if (::mkdir(candidate.c_str(), 0755) == 0) return RunLogLayout(candidate, suffix != 0);
    if (errno != EEXIST) return ErrnoError("creating the run's log directory " + candidate, errno);
  }
  return FailedPreconditionError("every name for this run's logs is taken, " + base + " to " +
                                 base + ".9999; remove earlier runs' logs or use another --run_id");
}

RunLogLayout RunLogLayout::Flat(std::string dir) {
  RunLogLayout layout(std::move(dir));
  layout.flat_ = true;
  return layout;
}

std::string RunLogLayout::WorkerDir(int attempt, int local_rank) const {
  if (flat_) return run_dir_;
  return run_dir_ + "/attempt_" + std::to_string(attempt) + "/" + std::to_string(local_rank);
}

std::string RunLogLayout::WorkerFile(int attempt, int local_rank, const char* name) const {
  if (flat_) {
    return run_dir_ + "/attempt_" + std::to_string(attempt) + "." + std::to_string(local_rank) +
           "." + name;
  }
  return WorkerDir(attempt, local_rank) + "/" + name;
}

std::string RunLogLayout::StdoutLog(int attempt, int local_rank) const {
  return WorkerFile(attempt, local_rank, "stdout.log");
}

std::string RunLogLayout::StderrLog(int attempt, int local_rank) const {
  return WorkerFile(attempt, local_rank, "stderr.log");
}

std::string RunLogLayout::ErrorFile(int attempt, int local_rank) const {
  return WorkerFile(attempt, local_rank, "error.json");
}

std::string RunLogLayout::ProgressFile(int attempt, int local_rank) const {
  return WorkerFile(attempt, local_rank, "progress");
}

Status RunLogLayout::PrepareWorkerDir(int attempt, int local_rank) const {
  if (run_dir_.empty()) return FailedPreconditionError("no log directory was claimed for the run");
  if (flat_) return Status::Ok();
  return CreateDirectories(WorkerDir(attempt, local_rank));
}

}  // namespace ddprun
