// The TCP transport: one connected socket per direction. Waits use poll() with the deadline;
// Close() shuts the socket down, which wakes a pending poll at once. A peer that dies is noticed
// the moment its kernel closes the connection.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "transport/link.h"

namespace ddp::cpu {

class TcpSendLink final : public SendLink {
 public:
  // Takes ownership of `fd`, a connected socket. `peer` names the other end in errors.
  TcpSendLink(int fd, std::string peer);
  ~TcpSendLink() override;
  ddprun::Status Send(const void* data, size_t bytes, Deadline deadline) override;
  void Close() override;

 private:
  int fd_;
  std::string peer_;
};

class TcpRecvLink final : public RecvLink {
 public:
  TcpRecvLink(int fd, std::string peer);
  ~TcpRecvLink() override;
  ddprun::Status Receive(size_t bytes, Deadline deadline, const Consumer& consume) override;
  void Close() override;

 private:
  int fd_;
  std::string peer_;
  std::vector<std::byte> scratch_;  // one piece of a message
};

// Waits until `fd` is ready for `events` (POLLIN or POLLOUT) or the deadline passes.
ddprun::Status WaitForSocket(int fd, short events, Deadline deadline, const std::string& peer);

}  // namespace ddp::cpu
