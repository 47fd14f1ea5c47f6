// ConnectRing; see ring_links.h.
#include "transport/ring_links.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "ddprun/base/bound_socket.h"
#include "ddprun/base/rank_shared_memory.h"
#include "ddprun/base/status_macros.h"
#include "transport/shm_link.h"
#include "transport/tcp_link.h"

namespace ddp::cpu {
namespace {

// What a rank publishes about itself.
struct Endpoint {
  std::string host;
  int port = 0;
  std::string boot_id;
  pid_t pid = 0;
  std::string shm_name = "-";  // "-": this rank does not take shared memory
};

std::string Serialize(const Endpoint& e) {
  return e.host + " " + std::to_string(e.port) + " " + e.boot_id + " " + std::to_string(e.pid) +
         " " + e.shm_name;
}

ddprun::Result<Endpoint> Parse(const std::string& text, int rank) {
  std::istringstream in(text);
  Endpoint e;
  if (!(in >> e.host >> e.port >> e.boot_id >> e.pid >> e.shm_name)) {
    return ddprun::InternalError("rank " + std::to_string(rank) +
                                 " published a malformed address: '" + text + "'");
  }
  return e;
}

// Ranks with the same identity share a kernel, an IPC namespace (so one /dev/shm) and a PID
// namespace (so a peer's pid means the same process): shared memory reaches them. Containers on
// one host share the boot id but not the namespaces.
std::string HostIdentity() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  in >> id;
  for (const char* ns : {"/proc/self/ns/ipc", "/proc/self/ns/pid"}) {
    char link[64] = {};
    const ssize_t n = ::readlink(ns, link, sizeof(link) - 1);
    id += "/" + (n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string("?"));
  }
  return id.empty() ? "unknown" : id;
}

std::string PeerName(int rank, const Endpoint& e) {
  return "rank " + std::to_string(rank) + " (" + e.host + ":" + std::to_string(e.port) + ")";
}

bool UsesShm(const Endpoint& a, const Endpoint& b) {
  return a.shm_name != "-" && b.shm_name != "-" && a.boot_id == b.boot_id;
}

// Waits until `fd` is readable or the deadline passes.
ddprun::Status WaitReadable(int fd, Deadline deadline, const std::string& what) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() < 0) return ddprun::DeadlineExceededError("timed out waiting for " + what);
    pollfd entry{fd, POLLIN, 0};
    const int ready =
        ::poll(&entry, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 60'000)));
    if (ready < 0 && errno != EINTR) return ddprun::ErrnoError("poll waiting for " + what, errno);
    if (ready > 0) return ddprun::Status::Ok();
  }
}

// Sets TCP_NODELAY on a fresh connection to `name` and returns a second descriptor of it, for
// the link object that says hello (it owns and closes its own). On failure `fd` is closed.
ddprun::Result<int> PrepareConnection(int fd, const std::string& name) {
  const int on = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0) {
    const int error = errno;
    ::close(fd);
    return ddprun::ErrnoError("setting TCP_NODELAY on the connection to " + name, error);
  }
  const int copy = ::dup(fd);
  if (copy < 0) {
    const int error = errno;
    ::close(fd);
    return ddprun::ErrnoError("dup of the connection to " + name, error);
  }
  return copy;
}

// Connects to `peer`, retrying while it is not listening yet, and says who we are.
ddprun::Result<int> ConnectTo(const Endpoint& peer, int my_rank, const std::string& name,
                              Deadline deadline) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(peer.port));
  if (::inet_pton(AF_INET, peer.host.c_str(), &address.sin_addr) != 1) {
    return ddprun::InvalidArgumentError(name + " published a host that is not an IPv4 address");
  }
  while (true) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return ddprun::ErrnoError("socket", errno);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
      ASSIGN_OR_RETURN(const int copy, PrepareConnection(fd, name));
      const int32_t hello = my_rank;
      TcpSendLink announce(copy, name);
      if (auto s = announce.Send(&hello, sizeof(hello), deadline); !s.ok()) {
        ::close(fd);
        return s;
      }
      return fd;
    }
    const int error = errno;
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) {
      return ddprun::UnavailableError("cannot connect to " + name + ": " + std::strerror(error));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // it is still starting
  }
}

// Accepts the previous rank's connection; a stranger (wrong hello) is dropped.
ddprun::Result<int> AcceptFrom(int listener, int expected_rank, const std::string& name,
                               Deadline deadline) {
  while (true) {
    RETURN_IF_ERROR(WaitReadable(listener, deadline, name));
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return ddprun::ErrnoError("accepting " + name, errno);
    }
    ASSIGN_OR_RETURN(const int copy, PrepareConnection(fd, name));
    int32_t hello = -1;
    TcpRecvLink greeting(copy, name);
    auto s = greeting.Receive(sizeof(hello), deadline, [&](const std::byte* data, size_t) {
      std::memcpy(&hello, data, sizeof(hello));
    });
    if (s.ok() && hello == expected_rank) return fd;
    ::close(fd);
  }
}

}  // namespace

ddprun::Result<RingLinks> ConnectRing(Store& store, const RingLinkOptions& options,
                                      Deadline deadline) {
  RingLinks links;
  const int n = options.world_size;
  if (n == 1) return links;
  const int next = (options.rank + 1) % n;
  const int prev = (options.rank + n - 1) % n;

  auto listener = ddprun::BoundSocket::Bind(options.host, 0);
  if (!listener.ok()) {
    return ddprun::UnavailableError("the CPU backend cannot listen on " + options.host + ": " +
                                    listener.status().message() + " (set DDPRUN_NODE_ADDR?)");
  }
  RETURN_IF_ERROR(listener->Listen());

  Endpoint me{options.host, listener->port(), HostIdentity(), ::getpid(), "-"};
  std::shared_ptr<ShmSegment> incoming;
  if (options.transport == TransportChoice::kAuto) {
    auto created =
        ShmSegment::Create(ddprun::NewRankSharedMemoryName("ring-" + std::to_string(options.rank)));
    if (created.ok()) {  // without shared memory, TCP it is
      incoming = std::move(created).value();
      me.shm_name = incoming->name();
    }
  }
  auto key = [&](int rank) { return options.key_prefix + "/" + std::to_string(rank); };
  RETURN_IF_ERROR(store.Set(key(options.rank), Serialize(me)));

  const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (auto s = store.Wait({key(next), key(prev)}, std::max(wait, std::chrono::milliseconds(1)));
      !s.ok()) {
    return ddprun::Status(s.code(), "waiting for ranks " + std::to_string(prev) + " and " +
                                        std::to_string(next) +
                                        " to publish their addresses: " + s.message());
  }
  Endpoint peers[2];
  for (int i = 0; i < 2; ++i) {
    const int rank = i == 0 ? next : prev;
    ASSIGN_OR_RETURN(const std::string text, store.Get(key(rank)));
    ASSIGN_OR_RETURN(peers[i], Parse(text, rank));
  }
  const Endpoint& next_end = peers[0];
  const Endpoint& prev_end = peers[1];
  const std::string next_name = PeerName(next, next_end);
  const std::string prev_name = PeerName(prev, prev_end);

  if (UsesShm(me, next_end)) {
    ASSIGN_OR_RETURN(auto segment, ShmSegment::Open(next_end.shm_name));
    links.to_next = std::make_unique<ShmSendLink>(std::move(segment), next_end.pid, next_name);
    links.next_is_shm = true;
  } else {
    ASSIGN_OR_RETURN(const int fd, ConnectTo(next_end, options.rank, next_name, deadline));
    links.to_next = std::make_unique<TcpSendLink>(fd, next_name);
  }
  if (UsesShm(me, prev_end)) {
    auto from_prev = std::make_unique<ShmRecvLink>(incoming, prev_end.pid, prev_name);
    RETURN_IF_ERROR(from_prev->AwaitSender(deadline));
    links.from_prev = std::move(from_prev);
    links.prev_is_shm = true;
  } else {
    ASSIGN_OR_RETURN(const int fd, AcceptFrom(listener->fd(), prev, prev_name, deadline));
    links.from_prev = std::make_unique<TcpRecvLink>(fd, prev_name);
  }
  return links;
}

}  // namespace ddp::cpu
