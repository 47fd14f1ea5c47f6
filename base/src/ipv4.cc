// IPv4 checks; see ipv4.h.
#include "ddprun/base/ipv4.h"

#include <arpa/inet.h>

namespace ddprun {

bool IsIpv4Address(const std::string& text) {
  in_addr parsed{};
  return ::inet_pton(AF_INET, text.c_str(), &parsed) == 1;
}

bool IsLoopbackAddress(const std::string& host) {
  if (host == "localhost") return true;
  in_addr parsed{};
  if (::inet_pton(AF_INET, host.c_str(), &parsed) != 1) return false;
  return (ntohl(parsed.s_addr) >> 24) == 127;
}

}  // namespace ddprun
