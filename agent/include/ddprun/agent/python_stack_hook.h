// ddprun's Python hook: a sitecustomize.py that ddprun writes into a run's log directory and puts
// first on a worker's PYTHONPATH while hang detection is on. It arms faulthandler so that the
// signal PythonStacksSignal() makes the worker dump every thread's Python stack into
// <DDPRUN_PYTHON_STACKS_DIR>/python_stacks.<pid>.txt, without any code in the script, and then
// runs the sitecustomize it shadows (the distribution's), if there is one.
#pragma once

#include <string>

#include "ddprun/agent/worker_environment.h"
#include "ddprun/base/status.h"

namespace ddprun {

// SIGRTMIN + 3: a signal no Python program is likely to use; sent only to workers that armed the
// hook (their dump file exists), never to others, whom it would end.
int PythonStacksSignal();

// Writes the hook into `directory` (created).
Status WritePythonStackHook(const std::string& directory);

// Sets up `environment` for the hook: `hook_directory` first on PYTHONPATH, the dump's directory
// and the signal.
void AddPythonStackHook(const std::string& hook_directory, const std::string& dump_directory,
                        EnvironmentMap& environment);

// The file a worker of pid `pid` that armed the hook dumps into.
std::string PythonStacksFile(const std::string& dump_directory, int pid);

}  // namespace ddprun
