// Turning what the user typed into the worker's command line, as torchrun does: a `.py` script
// (or -m module, or any file with --run_path) runs as `python3 -u ...` (PYTHON_EXEC overrides the
// interpreter); anything else, or anything with --no_python, is executed directly.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

struct ProgramRequest {
  std::string program;            // script, executable or module name
  std::vector<std::string> args;  // passed verbatim
  bool module = false;            // -m
  bool no_python = false;         // --no_python
  bool run_path = false;          // --run_path: a Python script whatever its name
};

// The full argv, its first element an executable's path. INVALID_ARGUMENT with a one-line
// message when the program (or the interpreter) is missing or not executable.
Result<std::vector<std::string>> ResolveWorkerCommand(const ProgramRequest& request);

// The path of an executable named like a shell would find it: a name with a '/' as is, else the
// first match on PATH.
Result<std::string> FindExecutable(const std::string& name);

}  // namespace ddprun
