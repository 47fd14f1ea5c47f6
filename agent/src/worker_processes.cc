// SystemWorkerProcesses; see worker_processes.h.
#include "ddprun/agent/worker_processes.h"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstring>

namespace ddprun {
namespace {

class SystemStartBatch final : public WorkerStartBatch {
 public:
  void Add(SpawnRequest request) override { spawner_.Add(std::move(request)); }
  std::vector<Result<SpawnedWorker>> Finish() override { return spawner_.Finish(); }

 private:
  WorkerSpawner spawner_;
};

class SystemProcesses final : public WorkerProcesses {
 public:
  std::unique_ptr<WorkerStartBatch> StartBatch() override {
    return std::make_unique<SystemStartBatch>();
  }

  Result<std::optional<int>> Reap(pid_t pid) override {
    int wait_status = 0;
    pid_t reaped;
    do {
      reaped = ::waitpid(pid, &wait_status, WNOHANG);
    } while (reaped < 0 && errno == EINTR);
    if (reaped == pid) return std::optional<int>(wait_status);
    if (reaped == 0) return std::optional<int>();
    return InternalError("cannot wait for pid " + std::to_string(pid) + ": " +
                         std::strerror(errno));
  }

  Status SignalGroup(pid_t pgid, int signal_number) override {
    if (::kill(-pgid, signal_number) == 0 || errno == ESRCH) return Status::Ok();
    return InternalError("cannot send " + SignalName(signal_number) + " to process group " +
                         std::to_string(pgid) + ": " + std::strerror(errno));
  }
};

}  // namespace

WorkerProcesses& SystemWorkerProcesses() {
  static SystemProcesses processes;
  return processes;
}

}  // namespace ddprun
