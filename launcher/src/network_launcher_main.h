// The network launcher's program (network_launcher.h): everything `ddprun` does, with gRPC:
// multi-node jobs, --hosts, --metrics_port, the job commands, and the store mode.
#pragma once

namespace ddprun {

// main() of the network launcher: returns its exit status (2 for usage errors).
int NetworkLauncherMain(int argc, char** argv);

}  // namespace ddprun
