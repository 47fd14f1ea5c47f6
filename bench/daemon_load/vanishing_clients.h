// The load generator's vanishing clients, through the mix: sessions and waits cancelled on
// fresh channels, and child processes (this program with --child) that join, wait and _exit
// without closing anything, so the kernel closes their sockets. The daemon must forget them.
#pragma once

#include <string>

#include "class_stats.h"
#include "load_options.h"

namespace ddprun::daemon_load {

// Sessions that join and are cancelled without WritesDone, and waits that are cancelled, each on
// a fresh channel that is then dropped.
void CancelLoop(const Options& options, int index, ClassStats& stats);

// Child mode: `vanish_sessions` sessions that each form a one-node round (the RoundReady is the
// proof the join arrived) and as many pending waits, then _exit: the kernel closes the socket.
int VanishChild(const Options& options);

// Spawns `self --child ...` at options.vanish_rate (at most 32 alive) and reaps them; a child
// that did not exit 0 is a failure.
void VanishLoop(const Options& options, const std::string& self, ClassStats& stats);

}  // namespace ddprun::daemon_load
