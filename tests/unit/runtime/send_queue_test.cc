// The ring's send queue over a real TCP link (a socket pair): a posted piece counts as sent only
// once the link has taken all of it, so a ring step may overwrite it; a piece dropped after a
// failure counts too, so no wait outlives the failure.
#include "send_queue.h"

#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <vector>

#include "transport/tcp_link.h"

using ddp::cpu::SendQueue;
using ddp::cpu::TcpSendLink;
using namespace std::chrono_literals;

namespace {

// A connected pair: the queue's link sends on one end, the test reads the other.
struct SocketPair {
  int ends[2] = {-1, -1};
  SocketPair() { REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0); }
  ~SocketPair() {
    if (ends[1] >= 0) ::close(ends[1]);  // ends[0] belongs to the link
  }
  // Reads exactly `bytes` from the test's end.
  std::vector<char> Read(size_t bytes) const {
    std::vector<char> data(bytes);
    for (size_t got = 0; got < bytes;) {
      const ssize_t n = ::read(ends[1], data.data() + got, bytes - got);
      REQUIRE(n > 0);
      got += static_cast<size_t>(n);
    }
    return data;
  }
};

ddp::cpu::Deadline InAMinute() { return std::chrono::steady_clock::now() + 60s; }

}  // namespace

TEST_CASE("a posted piece is sent only once the link has taken all of it") {
  SocketPair pair;
  TcpSendLink link(pair.ends[0], "the test's end");
  SendQueue queue(link, [](const ddprun::Status&) {});
  // Far more than a socket pair buffers, so the send blocks until the test reads.
  std::vector<char> piece(16 << 20, 'x');
  const SendQueue::Ticket ticket = queue.Post(piece.data(), piece.size(), InAMinute());
  CHECK(ticket == 1);
  auto sent = std::async(std::launch::async, [&] { queue.WaitSent(ticket); });
  CHECK(sent.wait_for(200ms) == std::future_status::timeout);  // nothing read yet
  CHECK(pair.Read(piece.size()) == piece);
  CHECK(sent.wait_for(60s) == std::future_status::ready);
  CHECK(queue.Flush().ok());
}

TEST_CASE("an empty piece has ticket 0, which is sent already") {
  SocketPair pair;
  TcpSendLink link(pair.ends[0], "the test's end");
  SendQueue queue(link, [](const ddprun::Status&) {});
  CHECK(queue.Post(nullptr, 0, InAMinute()) == 0);
  queue.WaitSent(0);  // returns at once
  CHECK(queue.Flush().ok());
}

TEST_CASE("pieces dropped by an abort count as sent, so waiting on them ends") {
  SocketPair pair;
  TcpSendLink link(pair.ends[0], "the test's end");
  SendQueue queue(link, [](const ddprun::Status&) {});
  std::vector<char> piece(16 << 20, 'x');
  queue.Post(piece.data(), piece.size(), InAMinute());  // blocks in the link: nobody reads
  const SendQueue::Ticket last = queue.Post(piece.data(), piece.size(), InAMinute());
  queue.Abort(ddprun::UnavailableError("the previous rank failed"));
  auto sent = std::async(std::launch::async, [&] { queue.WaitSent(last); });
  CHECK(sent.wait_for(60s) == std::future_status::ready);
  const ddprun::Status flushed = queue.Flush();
  CHECK(flushed.code() == ddprun::StatusCode::kUnavailable);
}
