// `ddprun`: see launcher/src/launcher_main.h.
#include "launcher_main.h"

int main(int argc, char** argv) { return ddprun::LauncherMain(argc, argv); }
