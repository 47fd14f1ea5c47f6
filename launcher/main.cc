// `ddprun`: see launcher/include/ddprun/launcher/launch.h.
#include "ddprun/launcher/launch.h"

int main(int argc, char** argv) { return ddprun::LauncherMain(argc, argv); }
