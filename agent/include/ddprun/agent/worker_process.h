// SpawnWorker: the system calls that start one worker. The child runs in its own process group
// (so a signal reaches everything it started), dies with SIGKILL when the thread that spawned it
// exits (parent-death signal: call it from the thread that lives as long as the agent), starts
// with an empty signal mask and default dispositions, reads /dev/null, and writes into two pipes
// whose read ends the caller gets. Never blocks for longer than the exec takes.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/base/worker_failure.h"  // SignalName

namespace ddprun {

struct SpawnedWorker {
  pid_t pid = -1;      // also the process group id
  int stdout_fd = -1;  // read end, close-on-exec; the caller owns it
  int stderr_fd = -1;  // read end, close-on-exec; the caller owns it
};

// Starts argv[0] (a path: no PATH search) with exactly `envp` as its environment.
// On failure no process is left running and no descriptor is leaked; the error names the
// program and the reason (for example "exec ./train: Permission denied").
Result<SpawnedWorker> SpawnWorker(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& envp);

}  // namespace ddprun
