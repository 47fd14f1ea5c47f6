// The TCP transport; see tcp_link.h.
#include "transport/tcp_link.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>

#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"

namespace ddp::cpu {
namespace {

constexpr size_t kPieceBytes = 1 << 20;  // a received message is consumed in pieces this big

}  // namespace

TcpConnection::TcpConnection(int fd, std::string peer) : socket_(io_), peer_(std::move(peer)) {
  socket_.assign(boost::asio::ip::tcp::v4(), fd);
}

void TcpConnection::Shutdown() {
  // The native call, not the socket object's: it is safe while another thread runs an operation.
  // ENOTCONN: the connection is already down (closed before, or by the peer), as wanted. Nothing
  // to return another failure to (Close paths): logged.
  if (::shutdown(socket_.native_handle(), SHUT_RDWR) != 0 && errno != ENOTCONN) {
    const int error = errno;
    ddprun::GetLogger("runtime")->error(
        "{}", ddprun::ErrnoError("shutting down the connection to " + peer_, error).message());
  }
}

ddprun::Status TcpConnection::Complete(boost::system::error_code* result, Deadline deadline) {
  io_.restart();
  io_.run_until(deadline);
  if (*result == boost::asio::error::would_block) {  // the deadline passed first
    // Shut down, not only cancel: a composed read or write may have a step queued that a cancel
    // would not reach, and the link is unusable after a failure anyway.
    Shutdown();
    socket_.cancel();
    io_.restart();
    io_.run();  // the cancelled handler runs, so nothing refers to `result` any more
    return ddprun::DeadlineExceededError("timed out waiting for " + peer_);
  }
  if (*result == boost::asio::error::eof) {
    return ddprun::UnavailableError("the connection to " + peer_ + " was closed by the peer");
  }
  if (*result) {
    return ddprun::UnavailableError("the connection to " + peer_ + " failed: " + result->message());
  }
  return ddprun::Status::Ok();
}

ddprun::Status TcpConnection::Write(const void* data, size_t bytes, Deadline deadline) {
  boost::system::error_code result = boost::asio::error::would_block;
  boost::asio::async_write(
      socket_, boost::asio::buffer(data, bytes),
      [&result](const boost::system::error_code& error, size_t) { result = error; });
  return Complete(&result, deadline);
}

ddprun::Status TcpConnection::Read(void* into, size_t bytes, Deadline deadline) {
  boost::system::error_code result = boost::asio::error::would_block;
  boost::asio::async_read(
      socket_, boost::asio::buffer(into, bytes),
      [&result](const boost::system::error_code& error, size_t) { result = error; });
  return Complete(&result, deadline);
}

TcpRecvLink::TcpRecvLink(int fd, std::string peer)
    : connection_(fd, std::move(peer)), scratch_(kPieceBytes) {}

ddprun::Status TcpRecvLink::Receive(size_t bytes, Deadline deadline, const Consumer& consume) {
  for (size_t left = bytes; left > 0;) {
    const size_t piece = std::min(left, scratch_.size());
    RETURN_IF_ERROR(connection_.Read(scratch_.data(), piece, deadline));
    consume(scratch_.data(), piece);
    left -= piece;
  }
  return ddprun::Status::Ok();
}

}  // namespace ddp::cpu
