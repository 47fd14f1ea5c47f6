// IPv4 addresses as flags and configuration files give them: checks only, no name resolution.
#pragma once

#include <string>

namespace ddprun {

// A numeric IPv4 address such as 0.0.0.0 or 10.1.2.3 (inet_pton's form).
bool IsIpv4Address(const std::string& text);

// 127.0.0.0/8 or "localhost".
bool IsLoopbackAddress(const std::string& host);

}  // namespace ddprun
