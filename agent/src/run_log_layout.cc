// RunLogLayout; see run_log_layout.h.
#include "ddprun/agent/run_log_layout.h"

#include <filesystem>
#include <system_error>

#include "ddprun/base/files.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {

std::string RunLogLayout::WorkerDir(int attempt, int local_rank) const {
  return log_dir_ + "/" + run_id_ + "/attempt_" + std::to_string(attempt) + "/" +
         std::to_string(local_rank);
}

std::string RunLogLayout::StdoutLog(int attempt, int local_rank) const {
  return WorkerDir(attempt, local_rank) + "/stdout.log";
}

std::string RunLogLayout::StderrLog(int attempt, int local_rank) const {
  return WorkerDir(attempt, local_rank) + "/stderr.log";
}

std::string RunLogLayout::ErrorFile(int attempt, int local_rank) const {
  return WorkerDir(attempt, local_rank) + "/error.json";
}

Status RunLogLayout::PrepareWorkerDir(int attempt, int local_rank) const {
  RETURN_IF_ERROR(CreateDirectories(WorkerDir(attempt, local_rank)));
  std::error_code ignored;
  std::filesystem::remove(ErrorFile(attempt, local_rank), ignored);
  return Status::Ok();
}

}  // namespace ddprun
