// The TCP transport; see tcp_link.h.
#include "transport/tcp_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ddp::cpu {
namespace {

constexpr size_t kPieceBytes = 1 << 20;  // a received message is consumed in pieces this big

ddprun::Status PeerGone(const std::string& peer, const std::string& how) {
  return ddprun::UnavailableError("the connection to " + peer + " " + how);
}

}  // namespace

ddprun::Status WaitForSocket(int fd, short events, Deadline deadline, const std::string& peer) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) {
      return ddprun::DeadlineExceededError("timed out waiting for " + peer);
    }
    pollfd entry{fd, events, 0};
    const int timeout_ms = static_cast<int>(std::min<int64_t>(left.count() + 1, 1'000'000));
    const int ready = ::poll(&entry, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ddprun::ErrnoError("poll on the connection to " + peer, errno);
    if (ready == 0) continue;  // re-check the deadline
    if (entry.revents & POLLNVAL) return PeerGone(peer, "was closed");
    return ddprun::Status::Ok();  // readable, writable, or an error the next call reports
  }
}

TcpSendLink::TcpSendLink(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}

TcpSendLink::~TcpSendLink() { ::close(fd_); }

void TcpSendLink::Close() { ::shutdown(fd_, SHUT_RDWR); }

ddprun::Status TcpSendLink::Send(const void* data, size_t bytes, Deadline deadline) {
  const auto* next = static_cast<const std::byte*>(data);
  size_t left = bytes;
  while (left > 0) {
    const ssize_t sent = ::send(fd_, next, left, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent > 0) {
      next += sent;
      left -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (auto s = WaitForSocket(fd_, POLLOUT, deadline, peer_); !s.ok()) return s;
      continue;
    }
    return PeerGone(peer_, std::string("failed: ") + std::strerror(errno));
  }
  return ddprun::Status::Ok();
}

TcpRecvLink::TcpRecvLink(int fd, std::string peer)
    : fd_(fd), peer_(std::move(peer)), scratch_(kPieceBytes) {}

TcpRecvLink::~TcpRecvLink() { ::close(fd_); }

void TcpRecvLink::Close() { ::shutdown(fd_, SHUT_RDWR); }

ddprun::Status TcpRecvLink::Receive(size_t bytes, Deadline deadline, const Consumer& consume) {
  size_t left = bytes;
  while (left > 0) {
    const size_t piece = std::min(left, scratch_.size());
    size_t filled = 0;
    while (filled < piece) {
      const ssize_t got = ::recv(fd_, scratch_.data() + filled, piece - filled, MSG_DONTWAIT);
      if (got > 0) {
        filled += static_cast<size_t>(got);
        continue;
      }
      if (got == 0) return PeerGone(peer_, "was closed by the peer");
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        if (auto s = WaitForSocket(fd_, POLLIN, deadline, peer_); !s.ok()) return s;
        continue;
      }
      return PeerGone(peer_, std::string("failed: ") + std::strerror(errno));
    }
    consume(scratch_.data(), piece);
    left -= piece;
  }
  return ddprun::Status::Ok();
}

}  // namespace ddp::cpu
