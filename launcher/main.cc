// `ddprun`: see launcher/src/launch.h.
#include "launch.h"

int main(int argc, char** argv) { return ddprun::LauncherMain(argc, argv); }
