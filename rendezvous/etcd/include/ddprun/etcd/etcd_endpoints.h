// The list of an etcd cluster's members as users write it ("h1:2379,h2:2379,h3:2379"), apart
// from the client, so that what only checks settings (ddprund's flags and file) needs no gRPC.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun::etcd {

// "h1:2379,h2:2379" -> each "host:port"; INVALID_ARGUMENT naming a malformed entry.
Result<std::vector<std::string>> ParseEtcdEndpoints(const std::string& list);

}  // namespace ddprun::etcd
