// PortReservation: a TCP port held for the workers. ddprun binds port 0 on the master address
// (SO_REUSEADDR, never listening) and keeps the socket for the whole run, so no other job on the
// host is given the same port while the workers' own listener (PyTorch's TCPStore on
// MASTER_PORT, which also sets SO_REUSEADDR) can still bind it. No "find a free port, close it,
// hope" race.
#pragma once

#include <string>

#include "ddprun/status.h"

namespace ddprun {

class PortReservation {
 public:
  // UNAVAILABLE when `host` is not an IPv4 address of this machine or no port is free.
  static Result<PortReservation> Reserve(const std::string& host);

  PortReservation(PortReservation&& other) noexcept;
  PortReservation& operator=(PortReservation&& other) noexcept;
  ~PortReservation();

  int port() const { return port_; }

 private:
  PortReservation(int fd, int port) : fd_(fd), port_(port) {}
  int fd_ = -1;
  int port_ = 0;
};

}  // namespace ddprun
