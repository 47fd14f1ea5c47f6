// The network launcher: `ddprun` with gRPC, installed as ../libexec/ddprun/ddprun beside the
// `ddprun` a user runs (in a build tree too). `ddprun` runs one node's job itself, and hands
// everything that needs the network to it by exec, with its command line as it is: a multi-node
// job, --hosts, --metrics_port, and status, attach, logs and cancel. Its store mode serves a
// single node's store (on_demand_store.h). Keeping gRPC, Protobuf and OpenSSL out of `ddprun`
// keeps their static initializers and pages out of every launch (bench/RESULTS.md).
#pragma once

#include <string>

namespace ddprun {

// `<network launcher> __store_helper FD`: serve a single node's store on the listening socket
// FD, with the token in DDPRUN_STORE_TOKEN, until killed.
inline constexpr char kStoreHelperArgument[] = "__store_helper";
inline constexpr char kStoreTokenVariable[] = "DDPRUN_STORE_TOKEN";

// Where the network launcher is, found from this program's own path.
std::string NetworkLauncherPath();

// Replaces this process with the network launcher, given `argv` as it is. Returns only when it
// cannot: 1, having said why on stderr.
int ExecNetworkLauncher(char** argv);

}  // namespace ddprun
