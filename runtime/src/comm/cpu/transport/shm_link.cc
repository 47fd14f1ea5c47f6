// The shared-memory transport; see shm_link.h.
#include "transport/shm_link.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"
#include "transport/futex.h"

namespace ddp::cpu {

// The segment's layout. Positions count bytes ever written or read (they never wrap); the data
// offset is position % kCapacity. Every message is padded to 8 bytes, so pieces handed to a
// consumer never split an element. `closed` is set by either end to fail the other at once.
struct ShmRing {
  static constexpr uint64_t kCapacity = 4 << 20;

  alignas(64) std::atomic<uint64_t> written;  // by the sender
  std::atomic<uint32_t> written_seq;          // futex word: bumped after each write
  alignas(64) std::atomic<uint64_t> read;     // by the receiver
  std::atomic<uint32_t> read_seq;             // futex word: bumped after each read
  alignas(64) std::atomic<uint32_t> closed;
  std::atomic<uint32_t> sender_attached;  // the sender has mapped the segment
  std::atomic<uint32_t> receiver_sleeping;
  std::atomic<uint32_t> sender_sleeping;
  alignas(64) std::byte data[kCapacity];
};

namespace {

constexpr size_t kSegmentBytes = sizeof(ShmRing);
// Both ends spin only briefly before they sleep on the futex: on a host with fewer cores than
// busy threads, a spinning thread takes the core that the thread it waits for (the peer's, or
// this process's own compute while DDP overlaps backward with communication) needs. A receiver
// spins a little longer: its data is usually microseconds away, and small collectives pay
// latency.
constexpr int kReceiverSpins = 200;
constexpr int kSenderSpins = 64;

uint64_t Padded(size_t bytes) { return (bytes + 7) & ~uint64_t{7}; }

// Marks the ring closed and wakes whichever end sleeps on it: both ends fail at once.
void CloseRing(ShmRing& ring) {
  ring.closed.store(1, std::memory_order_release);
  ring.written_seq.fetch_add(1, std::memory_order_release);
  ring.read_seq.fetch_add(1, std::memory_order_release);
  FutexWake(ring.written_seq);
  FutexWake(ring.read_seq);
}

// Waits until `ready()` holds (see SpinThenSleep), checking the ring's closed flag, the peer's
// liveness and the deadline between sleeps. `sleeping` tells the other end to wake us.
template <typename Ready>
ddprun::Status WaitUntil(ShmRing& ring, Ready ready, std::atomic<uint32_t>& seq,
                         std::atomic<uint32_t>& sleeping, const PeerLiveness& peer_alive,
                         Deadline deadline, const std::string& peer, int spins) {
  auto still_waiting = [&]() -> ddprun::Status {
    if (ring.closed.load(std::memory_order_acquire)) {
      return ddprun::UnavailableError("the shared-memory link to " + peer + " was closed");
    }
    RETURN_IF_ERROR(peer_alive.Check());
    if (std::chrono::steady_clock::now() >= deadline) {
      return ddprun::DeadlineExceededError("timed out waiting for " + peer);
    }
    return ddprun::Status::Ok();
  };
  return SpinThenSleep(seq, sleeping, SpinBudget{spins}, kFutexSleepSlice, "a shared-memory ring",
                       ready, still_waiting);
}

}  // namespace

ddprun::Result<std::shared_ptr<ShmSegment>> ShmSegment::Create(const std::string& name) {
  // Sparse: the 4 MiB of data get pages only as the ring first goes round.
  ASSIGN_OR_RETURN(auto mapping, SharedMapping::Create(name, kSegmentBytes, /*reserve=*/false));
  new (mapping->data()) ShmRing;  // default-initialized: the atomics are the zero pages
  return std::shared_ptr<ShmSegment>(new ShmSegment(std::move(mapping)));
}

ddprun::Result<std::shared_ptr<ShmSegment>> ShmSegment::Open(const std::string& name) {
  ASSIGN_OR_RETURN(auto mapping, SharedMapping::Open(name, kSegmentBytes));
  // Both ends are attached: nothing is left behind in /dev/shm. The creator removes it again
  // when it lets go, if this failed.
  mapping->Unlink();
  return std::shared_ptr<ShmSegment>(new ShmSegment(std::move(mapping)));
}

ShmSendLink::ShmSendLink(std::shared_ptr<ShmSegment> segment, pid_t peer_pid, std::string peer)
    : segment_(std::move(segment)), peer_alive_(peer_pid, peer), peer_(std::move(peer)) {
  ShmRing& ring = segment_->ring();
  ring.sender_attached.store(1, std::memory_order_release);
  ring.written_seq.fetch_add(1, std::memory_order_release);
  FutexWake(ring.written_seq);
}

ShmSendLink::~ShmSendLink() { Close(); }

void ShmSendLink::Close() { CloseRing(segment_->ring()); }

ddprun::Status ShmSendLink::Send(const void* data, size_t bytes, Deadline deadline) {
  ShmRing& ring = segment_->ring();
  const auto* source = static_cast<const std::byte*>(data);
  const uint64_t total = Padded(bytes);
  uint64_t done = 0;
  uint64_t written = ring.written.load(std::memory_order_relaxed);
  while (done < total) {
    if (ring.closed.load(std::memory_order_acquire)) {  // closed by either end: stop at once
      return ddprun::UnavailableError("the shared-memory link to " + peer_ + " was closed");
    }
    uint64_t room = 0;
    auto has_room = [&] {
      room = ShmRing::kCapacity - (written - ring.read.load(std::memory_order_acquire));
      return room > 0;
    };
    RETURN_IF_ERROR(WaitUntil(ring, has_room, ring.read_seq, ring.sender_sleeping, peer_alive_,
                              deadline, peer_, kSenderSpins));
    const uint64_t offset = written % ShmRing::kCapacity;
    const uint64_t n = std::min({room, total - done, ShmRing::kCapacity - offset});
    const uint64_t payload = done < bytes ? std::min<uint64_t>(n, bytes - done) : 0;
    std::memcpy(ring.data + offset, source + done, payload);  // the padding is left as is
    written += n;
    done += n;
    ring.written.store(written, std::memory_order_release);
    ring.written_seq.fetch_add(1, std::memory_order_release);
    if (ring.receiver_sleeping.load(std::memory_order_seq_cst)) FutexWake(ring.written_seq);
  }
  return ddprun::Status::Ok();
}

ShmRecvLink::ShmRecvLink(std::shared_ptr<ShmSegment> segment, pid_t peer_pid, std::string peer)
    : segment_(std::move(segment)), peer_alive_(peer_pid, peer), peer_(std::move(peer)) {}

ShmRecvLink::~ShmRecvLink() { Close(); }

void ShmRecvLink::Close() { CloseRing(segment_->ring()); }

ddprun::Status ShmRecvLink::AwaitSender(Deadline deadline) {
  ShmRing& ring = segment_->ring();
  auto attached = [&] { return ring.sender_attached.load(std::memory_order_acquire) != 0; };
  return WaitUntil(ring, attached, ring.written_seq, ring.receiver_sleeping, peer_alive_, deadline,
                   peer_, kReceiverSpins);
}

ddprun::Status ShmRecvLink::Receive(size_t bytes, Deadline deadline, const Consumer& consume) {
  ShmRing& ring = segment_->ring();
  const uint64_t total = Padded(bytes);
  uint64_t done = 0;
  uint64_t read = ring.read.load(std::memory_order_relaxed);
  while (done < total) {
    uint64_t available = 0;
    auto has_data = [&] {
      available = ring.written.load(std::memory_order_acquire) - read;
      return available > 0;
    };
    RETURN_IF_ERROR(WaitUntil(ring, has_data, ring.written_seq, ring.receiver_sleeping, peer_alive_,
                              deadline, peer_, kReceiverSpins));
    const uint64_t offset = read % ShmRing::kCapacity;
    const uint64_t n = std::min({available, total - done, ShmRing::kCapacity - offset});
    const uint64_t payload = done < bytes ? std::min<uint64_t>(n, bytes - done) : 0;
    if (payload > 0) consume(ring.data + offset, payload);
    read += n;
    done += n;
    ring.read.store(read, std::memory_order_release);
    ring.read_seq.fetch_add(1, std::memory_order_release);
    if (ring.sender_sleeping.load(std::memory_order_seq_cst)) FutexWake(ring.read_seq);
  }
  return ddprun::Status::Ok();
}

}  // namespace ddp::cpu
