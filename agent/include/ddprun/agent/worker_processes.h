// WorkerProcesses: the system calls by which the supervisor starts, reaps and signals its
// workers, behind one interface, so that its decisions can be tested with a fake that starts no
// process. The real one (SystemWorkerProcesses) is process_spawn.h's WorkerSpawner, waitpid and
// kill. Either way a change in a worker is announced by SIGCHLD to this process (by the kernel
// for real children, by a fake for its own), and the supervisor then reaps each of its workers.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <vector>

#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status.h"

namespace ddprun {

// One attempt's workers, started as WorkerSpawner starts them: each as soon as it is added,
// every result once all are.
class WorkerStartBatch {
 public:
  virtual ~WorkerStartBatch() = default;
  virtual void Add(SpawnRequest request) = 0;
  // Call once: one result per Add, in order.
  virtual std::vector<Result<SpawnedWorker>> Finish() = 0;
};

class WorkerProcesses {
 public:
  virtual ~WorkerProcesses() = default;
  virtual std::unique_ptr<WorkerStartBatch> StartBatch() = 0;
  // The wait status of `pid` once it has exited (it is reaped by this call); nullopt while it
  // runs. An error when it cannot be waited for (something else reaped it).
  virtual Result<std::optional<int>> Reap(pid_t pid) = 0;
  // `signal_number` to the process group `pgid`; a group that is gone already is no error.
  virtual Status SignalGroup(pid_t pgid, int signal_number) = 0;
};

// The system's: WorkerSpawner, waitpid(pid, WNOHANG), kill(-pgid). One for the process.
WorkerProcesses& SystemWorkerProcesses();

}  // namespace ddprun
