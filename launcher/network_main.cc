// The network launcher, libexec/ddprun/ddprun: see launcher/src/network_launcher.h.
#include "network_launcher_main.h"

int main(int argc, char** argv) { return ddprun::NetworkLauncherMain(argc, argv); }
