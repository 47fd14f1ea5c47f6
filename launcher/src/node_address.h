// Finding this node's addresses: what a rendezvous endpoint's host name resolves to, whether an
// address belongs to this host, and which local address the other nodes reach it at.
#pragma once

#include <string>

#include "ddprun/base/status.h"
#include "host_name.h"

namespace ddprun {

// The first IPv4 address of `host` (a name or a numeric address). UNAVAILABLE when it does not
// resolve.
Result<std::string> ResolveIPv4(const std::string& host);

// Whether `address` (numeric IPv4) is one of this host's: it can be bound.
bool IsLocalAddress(const std::string& address);

// The local address the kernel would use to reach `address`:`port` (no packet is sent).
Result<std::string> SourceAddressToward(const std::string& address, int port);

// The name of the network interface that holds `address` (numeric IPv4), such as "eth0";
// NOT_FOUND when none does.
Result<std::string> InterfaceWithAddress(const std::string& address);

}  // namespace ddprun
