// What every `ddprun SUBCOMMAND` (status, attach, logs, cancel) does with its command line first.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/flag_parser.h"

namespace ddprun {

inline constexpr int kGoOn = -1;

// Parses `args` against `command` (its rows' targets get the values): kGoOn to go on; 0 after
// printing --help; 2 after printing a usage error as one line ("ddprun NAME: error: ... (see
// ddprun NAME --help)").
int ParseSubcommand(CommandSpec command, const std::string& name,
                    const std::vector<std::string>& args);

}  // namespace ddprun
