// The names of the POSIX shared memory a rank creates in /dev/shm (the CPU ring's segments, the
// registered buffers' slices), and their removal once the rank is gone.
//
// A rank removes its names itself once every peer has mapped them; one killed in the moment
// between (SIGKILL mid-setup) cannot, so every name carries the creating process's pid and the
// agent that reaps a rank removes whatever it left. Removing a name never harms a peer that has
// mapped it: the pages live until the last mapping goes.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace ddprun {

// A new name for shm_open: "/ddprun-<this process's pid>-<kind>-<16 random hex digits>". `kind`
// says what it is for ("ring-3", "registered") and holds no '/'.
std::string NewRankSharedMemoryName(std::string_view kind);

// Removes every name NewRankSharedMemoryName gave in process `pid`, which must have exited (a
// live one may still need them); returns how many it removed.
int RemoveRankSharedMemory(pid_t pid);

}  // namespace ddprun
