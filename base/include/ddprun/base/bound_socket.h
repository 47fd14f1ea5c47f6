// BoundSocket: an IPv4 TCP socket bound to an address and kept bound for its lifetime
// (SO_REUSEADDR, close-on-exec). Binding port 0 takes a free port that stays ours: ports are
// bound, never guessed and released for someone to bind later. Move-only; closes on destruction.
#pragma once

#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

class BoundSocket {
 public:
  // Binds host:port ("localhost" or a numeric IPv4 address). INVALID_ARGUMENT for another host
  // name; UNAVAILABLE naming the address and the reason when it cannot be bound.
  static Result<BoundSocket> Bind(const std::string& host, int port);
  // Takes over `fd`, an IPv4 TCP socket bound elsewhere (inherited from the process that bound
  // it), making it close-on-exec and blocking. INVALID_ARGUMENT, leaving `fd` open, when it is
  // not one.
  static Result<BoundSocket> Adopt(int fd);

  BoundSocket(BoundSocket&& other) noexcept;
  BoundSocket& operator=(BoundSocket&& other) noexcept;
  ~BoundSocket();

  // Starts accepting connections.
  Status Listen();

  int fd() const { return fd_; }
  int port() const { return port_; }

 private:
  BoundSocket(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace ddprun
