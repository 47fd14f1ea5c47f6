// Node addresses; see node_address.h.
#include "node_address.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ddprun/base/bound_socket.h"

namespace ddprun {

Result<std::string> InterfaceWithAddress(const std::string& address) {
  ifaddrs* interfaces = nullptr;
  if (::getifaddrs(&interfaces) != 0) {
    return UnavailableError(std::string("getifaddrs failed: ") + std::strerror(errno));
  }
  std::string found;
  for (ifaddrs* at = interfaces; at != nullptr && found.empty(); at = at->ifa_next) {
    if (at->ifa_addr == nullptr || at->ifa_addr->sa_family != AF_INET) continue;
    char text[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(at->ifa_addr)->sin_addr, text,
                sizeof(text));
    if (address == text) found = at->ifa_name;
  }
  ::freeifaddrs(interfaces);
  if (found.empty()) return NotFoundError("no network interface holds " + address);
  return found;
}

Result<std::string> ResolveIPv4(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const int error = ::getaddrinfo(host.c_str(), nullptr, &hints, &found);
  if (error != 0 || found == nullptr) {
    return UnavailableError("cannot resolve '" + host + "': " + ::gai_strerror(error));
  }
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
              sizeof(text));
  ::freeaddrinfo(found);
  return std::string(text);
}

bool IsLocalAddress(const std::string& address) { return BoundSocket::Bind(address, 0).ok(); }

Result<std::string> SourceAddressToward(const std::string& address, int port) {
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &target.sin_addr) != 1) {
    return InvalidArgumentError("'" + address + "' is not an IPv4 address");
  }
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  // connect() on a UDP socket only picks the route and the source address.
  if (::connect(fd, reinterpret_cast<sockaddr*>(&target), sizeof(target)) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError("finding the route to " + address, error);
  }
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length);
  ::close(fd);
  char text[INET_ADDRSTRLEN] = {};
  ::inet_ntop(AF_INET, &local.sin_addr, text, sizeof(text));
  return std::string(text);
}

}  // namespace ddprun
