// ddprun's Python hook; see python_hook.h.
#include "python_hook.h"

#include <signal.h>

#include "ddprun/base/files.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_environment_contract.h"

namespace ddprun {

// agent/python/sitecustomize.py, compiled in (agent/CMakeLists.txt).
extern const char kPythonHookSource[];

int PythonStacksSignal() { return SIGRTMIN + 3; }

Status WritePythonHook(const std::string& directory) {
  RETURN_IF_ERROR(CreateDirectories(directory));
  return WriteFileAtomically(directory + "/sitecustomize.py", kPythonHookSource);
}

void AddPythonHook(const std::string& hook_directory, const std::string& dump_directory,
                   EnvironmentMap& environment) {
  auto path = environment.find("PYTHONPATH");
  environment["PYTHONPATH"] = path == environment.end() || path->second.empty()
                                  ? hook_directory
                                  : hook_directory + ":" + path->second;
  environment[worker_env::kPythonStacksDir.name] = dump_directory;
  environment[worker_env::kPythonStacksSignal.name] = std::to_string(PythonStacksSignal());
}

std::string PythonStacksFile(const std::string& dump_directory, int pid) {
  return dump_directory + "/python_stacks." + std::to_string(pid) + ".txt";
}

}  // namespace ddprun
