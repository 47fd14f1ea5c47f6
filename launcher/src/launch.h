// The `ddprun` program: parse the command line, then run the node's workers under an embedded
// rendezvous server and the supervisor. Blocks until the job ends.
#pragma once

#include "launch_config.h"

namespace ddprun {

// Runs a validated configuration and returns ddprun's exit status.
int Launch(const LaunchConfig& config);

// main() of `ddprun`: returns its exit status (2 for usage errors, printed as one line).
int LauncherMain(int argc, char** argv);

}  // namespace ddprun
