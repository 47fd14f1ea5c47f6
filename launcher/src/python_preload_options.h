// --python_preload=MODULE[,MODULE...] | auto (PET_PYTHON_PRELOAD): warm Python workers
// (python_preload.h). Applies to a program ddprun runs with Python (a .py script, -m, or
// --run_path) through an interpreter named python*; any other program, --no_python, or a
// PYTHON_EXEC naming something else starts as without the flag. `auto` preloads torch when the
// script imports it (a line `import torch...` or `from torch...`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ddprun/agent/program_resolution.h"
#include "ddprun/agent/python_preload.h"
#include "ddprun/base/flag_spec.h"
#include "ddprun/base/status.h"

namespace ddprun {

FlagSpec PythonPreloadFlag(std::string& value);

// What to preload for `request`, resolved to `worker_argv`: nothing (nullopt) where the flag
// does not apply. INVALID_ARGUMENT with a one-line message for a value that names no module.
Result<std::optional<PythonPreloadSpec>> ResolvePythonPreload(
    const std::string& value, const ProgramRequest& request,
    const std::vector<std::string>& worker_argv);

}  // namespace ddprun
