// ddprun's Python hook; see python_stack_hook.h.
#include "ddprun/agent/python_stack_hook.h"

#include <signal.h>

#include "ddprun/base/files.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_environment_contract.h"

namespace ddprun {
namespace {

// Dependency-free, and silent: a hook that cannot arm leaves the program exactly as it was.
constexpr const char kHookSource[] =
    R"PY(# Written by ddprun for this run's hang detection (--hang_timeout). It arms faulthandler so
# that ddprun can have every thread's Python stack dumped before it stops a hung worker, then
# runs the sitecustomize this file shadows, if there is one.
import os as _os
import sys as _sys


def _ddprun_arm():
    directory = _os.environ.get("DDPRUN_PYTHON_STACKS_DIR")
    signal_number = _os.environ.get("DDPRUN_PYTHON_STACKS_SIGNAL")
    if not directory or not signal_number:
        return
    try:
        import faulthandler
        path = _os.path.join(directory, "python_stacks.%d.txt" % _os.getpid())
        stream = open(path, "w")
        faulthandler.register(int(signal_number), file=stream, all_threads=True)
        _sys._ddprun_python_stacks = stream  # faulthandler writes to it for the process's life
    except Exception:
        pass


def _ddprun_run_shadowed():
    try:
        import importlib.machinery
        import importlib.util
        here = _os.path.dirname(_os.path.abspath(__file__))
        path = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:
        pass


_ddprun_arm()
_ddprun_run_shadowed()
)PY";

}  // namespace

int PythonStacksSignal() { return SIGRTMIN + 3; }

Status WritePythonStackHook(const std::string& directory) {
  RETURN_IF_ERROR(CreateDirectories(directory));
  return WriteFileAtomically(directory + "/sitecustomize.py", kHookSource);
}

void AddPythonStackHook(const std::string& hook_directory, const std::string& dump_directory,
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
