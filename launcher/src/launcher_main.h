// The `ddprun` program: reads the command line, runs one node's job itself, and hands everything
// that needs the network to the network launcher (network_launcher.h).
#pragma once

#include <optional>

#include "command_line.h"

namespace ddprun {

// main() of `ddprun`: returns its exit status (2 for usage errors, printed as one line).
int LauncherMain(int argc, char** argv);

// What a command line asks for that runs no job: --help, --version or a usage error, answered on
// stdout or stderr; returns the exit status. nullopt for anything else.
std::optional<int> AnswerWithoutAJob(const ParsedCommandLine& parsed);

// Whether `argv[1]` names a job command (status, attach, logs, cancel), which talk to servers.
bool IsJobCommand(int argc, char** argv);

}  // namespace ddprun
