// The `ddprun` command line: torchrun's flags (both the underscore and dash spellings, and the
// PET_* environment variables), resolved and validated into a LaunchConfig.
// Options end at the first argument that is not an option (the program) or at "--"; everything
// after the program is passed to it verbatim.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ddprun/base/status.h"
#include "launch_config.h"
#include "submit_request.h"

namespace ddprun {

struct HelpRequest {
  std::string text;
};
struct VersionRequest {};
// A usage error: one line saying what was wrong and what to do (OneLine: what it quotes from
// the command line may hold anything). ddprun exits 2.
struct UsageError {
  explicit UsageError(std::string text) : message(OneLine(std::move(text))) {}
  std::string message;
};

using ParsedCommandLine =
    std::variant<LaunchConfig, SubmitRequest, HelpRequest, VersionRequest, UsageError>;

// `args` without the program name (argv[1..]). Reads PET_* variables, PYTHON_EXEC and PATH from
// the process environment. Checks everything that can be checked without starting anything:
// the worker program exists and is executable, and --log_dir can be created. With --hosts or
// --hostfile, a SubmitRequest: the program is looked for by each host's daemon instead.
ParsedCommandLine ParseCommandLine(const std::vector<std::string>& args);

}  // namespace ddprun
