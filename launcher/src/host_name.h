// HostName: this host's name, as reports and node ids name it. Apart from node_address.h, whose
// name resolution (getaddrinfo) only the network launcher needs: `ddprun` is linked statically,
// and a static program that resolves names needs the shared NSS libraries of its own glibc.
#pragma once

#include <string>

namespace ddprun {

// This host's name, or "localhost".
std::string HostName();

}  // namespace ddprun
