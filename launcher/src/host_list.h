// The hosts of a submitted job: --hosts=h0,h1:29500 or --hostfile=FILE (one host[:port] a line;
// '#' starts a comment; blank lines are skipped), each as "host:port" with the daemon's port
// 29400 when none is given.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

// INVALID_ARGUMENT naming the bad entry, an empty list, or a host given twice.
Result<std::vector<std::string>> ParseHostList(const std::string& comma_separated);
Result<std::vector<std::string>> ReadHostFile(const std::string& path);

}  // namespace ddprun
