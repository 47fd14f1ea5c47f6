// What every `ddprun SUBCOMMAND` (status, attach, logs, cancel) does with its command line first.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace ddprun {

inline constexpr int kGoOn = -1;

// Parses `args` with `app`: kGoOn to go on; 0 after printing --help; 2 after printing a usage
// error as one line ("ddprun NAME: error: ... (see ddprun NAME --help)").
int ParseSubcommand(CLI::App& app, const std::string& name, const std::vector<std::string>& args);

}  // namespace ddprun
