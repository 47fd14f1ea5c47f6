// The network launcher's store mode: serves a single node's job store for `ddprun`
// (on_demand_store.h), which started it at the store's first connection.
#pragma once

namespace ddprun {

// Serves the store on the inherited listening socket `listener_fd` (its number, as text), with
// the token in DDPRUN_STORE_TOKEN, until SIGTERM, SIGINT or SIGHUP (or the parent-death signal
// `ddprun` gave it). Returns the exit status: 1, said on stderr, when it cannot serve.
int ServeStoreMain(const char* listener_fd);

}  // namespace ddprun
