// Turning what the user typed into the worker's command line, as torchrun does: a `.py` script
// (or -m module, or any file with --run_path) runs as `python3 -u ...` (PYTHON_EXEC overrides the
// interpreter); anything else, or anything with --no_python, is executed directly.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

// How the program runs.
enum class ProgramMode {
  kAsTyped,   // a `.py` script under Python, anything else executed
  kModule,    // -m: a Python module
  kNoPython,  // --no_python: executed, whatever its name
  kRunPath,   // --run_path: a Python script whatever its name
};

// The mode of torchrun's flags: --run_path wins over --no_python; INVALID_ARGUMENT for -m with
// either.
Result<ProgramMode> ProgramModeOf(bool module, bool no_python, bool run_path);

struct ProgramRequest {
  std::string program;            // script, executable or module name
  std::vector<std::string> args;  // passed verbatim
  ProgramMode mode = ProgramMode::kAsTyped;
};

// Where the program is looked for: relative paths from working_dir, names on path (a PATH value),
// Python as python_exec (PYTHON_EXEC) names it. The daemon resolves a job's program in the job's
// working directory and environment, not its own.
struct ProgramContext {
  std::string working_dir;  // empty: this process's
  std::string path;         // empty: /usr/local/bin:/usr/bin:/bin
  std::string python_exec;  // empty: python3
  // This process's working directory, PATH and PYTHON_EXEC.
  static ProgramContext OfThisProcess();
};

// The full argv, its first element an executable's path (relative paths stay relative to the
// context's working directory). INVALID_ARGUMENT with a one-line message when the program (or the
// interpreter) is missing or not executable.
Result<std::vector<std::string>> ResolveWorkerCommand(
    const ProgramRequest& request, const ProgramContext& context = ProgramContext::OfThisProcess());

// The path of an executable named like a shell would find it: a name with a '/' as is, else the
// first match on the context's PATH.
Result<std::string> FindExecutable(const std::string& name,
                                   const ProgramContext& context = ProgramContext::OfThisProcess());

}  // namespace ddprun
