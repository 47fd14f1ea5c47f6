// BoundSocket; see bound_socket.h.
#include "ddprun/base/bound_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace ddprun {

Result<BoundSocket> BoundSocket::Bind(const std::string& host, int port) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  const std::string numeric = host == "localhost" ? "127.0.0.1" : host;
  if (::inet_pton(AF_INET, numeric.c_str(), &address.sin_addr) != 1) {
    return InvalidArgumentError("'" + host + "' is not an IPv4 address to bind");
  }
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket", errno);
  const int on = 1;
  if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(
        "setting SO_REUSEADDR on a socket to bind " + host + ":" + std::to_string(port), error);
  }
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    ::close(fd);
    return UnavailableError("cannot bind " + host + ":" + std::to_string(port) + ": " +
                            std::strerror(error));
  }
  socklen_t length = sizeof(address);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    ::close(fd);
    return ErrnoError("getsockname of the socket bound to " + host + ":" + std::to_string(port),
                      error);
  }
  return BoundSocket(fd, ntohs(address.sin_port));
}

Result<BoundSocket> BoundSocket::Adopt(int fd) {
  sockaddr_in address{};
  socklen_t length = sizeof(address);
  int type = 0;
  socklen_t type_length = sizeof(type);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0 ||
      address.sin_family != AF_INET ||
      ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 || type != SOCK_STREAM) {
    return InvalidArgumentError("descriptor " + std::to_string(fd) +
                                " is not a bound IPv4 TCP socket");
  }
  // Blocking, as Bind makes one: the process that bound it may have waited on it with an event
  // loop, which leaves the shared file description non-blocking.
  const int flags = ::fcntl(fd, F_GETFL);
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 || flags < 0 ||
      ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return ErrnoError("taking over descriptor " + std::to_string(fd), errno);
  }
  return BoundSocket(fd, ntohs(address.sin_port));
}

BoundSocket::BoundSocket(BoundSocket&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), port_(other.port_) {}

BoundSocket& BoundSocket::operator=(BoundSocket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    port_ = other.port_;
  }
  return *this;
}

BoundSocket::~BoundSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Status BoundSocket::Listen() {
  if (::listen(fd_, SOMAXCONN) != 0) {
    return ErrnoError("listen on port " + std::to_string(port_), errno);
  }
  return Status::Ok();
}

}  // namespace ddprun
