// ddprun's Python hook: agent/python/sitecustomize.py, which ddprun writes into a run's log
// directory and puts first on a worker's PYTHONPATH while hang or straggler detection is on.
// Without any code in the script it
// - arms faulthandler so that the signal PythonStacksSignal() makes the worker dump every
//   thread's Python stack into <DDPRUN_PYTHON_STACKS_DIR>/python_stacks.<pid>.txt;
// - counts torch.distributed's collectives, DDP's buckets and optimizer steps in the worker's
//   progress page (DDPRUN_PROGRESS_FD, progress_page.h), once the script imports torch;
// and then runs the sitecustomize it shadows (the distribution's), if there is one.
#pragma once

#include <string>

#include "ddprun/base/environment_map.h"
#include "ddprun/base/status.h"

namespace ddprun {

// SIGRTMIN + 3: a signal no Python program is likely to use; sent only to workers that armed the
// hook (their dump file exists), never to others, whom it would end.
int PythonStacksSignal();

// Writes the hook into `directory` (created).
Status WritePythonHook(const std::string& directory);

// Sets up `environment` for the hook: `hook_directory` first on PYTHONPATH, the dump's directory
// and the signal.
void AddPythonHook(const std::string& hook_directory, const std::string& dump_directory,
                   EnvironmentMap& environment);

// The file a worker of pid `pid` that armed the hook dumps into.
std::string PythonStacksFile(const std::string& dump_directory, int pid);

}  // namespace ddprun
