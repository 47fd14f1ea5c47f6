// The TCP transport: one connected socket per direction, driven by Boost.Asio. Each call runs the
// link's own io_context on the calling thread until the operation completes or the deadline
// passes (then the operation is cancelled). Close() shuts the socket down, which completes a
// pending operation at once with an error. A peer that dies is noticed the moment its kernel
// closes the connection.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <vector>

#include "transport/link.h"

namespace ddp::cpu {

// One connected socket and the io_context that drives it (shared by both link directions' code).
class TcpConnection {
 public:
  // Takes ownership of `fd`, a connected socket. `peer` names the other end in errors.
  TcpConnection(int fd, std::string peer);
  // Writes all of `data`, or reads exactly `bytes` into `into`.
  ddprun::Status Write(const void* data, size_t bytes, Deadline deadline);
  ddprun::Status Read(void* into, size_t bytes, Deadline deadline);
  // Any thread: shuts the socket down; pending and later operations fail at once.
  void Shutdown();

 private:
  // Runs the io_context until `*result` is set or the deadline passes.
  ddprun::Status Complete(boost::system::error_code* result, Deadline deadline);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::string peer_;
};

class TcpSendLink final : public SendLink {
 public:
  TcpSendLink(int fd, std::string peer) : connection_(fd, std::move(peer)) {}
  ddprun::Status Send(const void* data, size_t bytes, Deadline deadline) override {
    return connection_.Write(data, bytes, deadline);
  }
  void Close() override { connection_.Shutdown(); }

 private:
  TcpConnection connection_;
};

class TcpRecvLink final : public RecvLink {
 public:
  TcpRecvLink(int fd, std::string peer);
  ddprun::Status Receive(size_t bytes, Deadline deadline, const Consumer& consume) override;
  void Close() override { connection_.Shutdown(); }

 private:
  TcpConnection connection_;
  std::vector<std::byte> scratch_;  // one piece of a message
};

}  // namespace ddp::cpu
