// The shared-memory transport; see shm_link.h.
#include "transport/shm_link.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <thread>

#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/thread_annotations.h"

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
constexpr std::chrono::milliseconds kSleepSlice{50};

uint64_t Padded(size_t bytes) { return (bytes + 7) & ~uint64_t{7}; }

// Removes a segment's name, logging a failure (there is nothing to return it to). ENOENT is
// fine where the other end may have removed it already.
void Unlink(const std::string& name, bool absent_is_fine) {
  if (::shm_unlink(name.c_str()) == 0) return;
  const int error = errno;
  if (absent_is_fine && error == ENOENT) return;
  ddprun::GetLogger("runtime")->error(
      "{}", ddprun::ErrnoError("removing shared memory " + name, error).message());
}

void FutexWake(std::atomic<uint32_t>& word) {
  // Its result is not checked: it fails only for a bad address or operation (EFAULT, EINVAL),
  // and these are a mapped word and FUTEX_WAKE.
  (void)::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, 1, nullptr, nullptr,
                  0);
}

// Sleeps while `word` holds `expected`, for at most `slice`. Waking, a changed word (EAGAIN), the
// slice ending (ETIMEDOUT) and a signal (EINTR) are all fine: the caller checks again.
ddprun::Status FutexWait(std::atomic<uint32_t>& word, uint32_t expected,
                         std::chrono::milliseconds slice) {
  timespec timeout{0, static_cast<long>(slice.count()) * 1'000'000};
  if (::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &timeout,
                nullptr, 0) == 0) {
    return ddprun::Status::Ok();
  }
  const int error = errno;
  if (error == EAGAIN || error == ETIMEDOUT || error == EINTR) return ddprun::Status::Ok();
  return ddprun::ErrnoError("futex wait on a shared-memory ring", error);
}

// Marks the ring closed and wakes whichever end sleeps on it: both ends fail at once.
void CloseRing(ShmRing& ring) {
  ring.closed.store(1, std::memory_order_release);
  ring.written_seq.fetch_add(1, std::memory_order_release);
  ring.read_seq.fetch_add(1, std::memory_order_release);
  FutexWake(ring.written_seq);
  FutexWake(ring.read_seq);
}

// Waits until `ready()` holds: spins, then sleeps on `seq` in slices, checking the ring's closed
// flag, the peer's liveness and the deadline in between. `sleeping` tells the other end to wake
// us.
template <typename Ready>
ddprun::Status WaitUntil(ShmRing& ring, Ready ready, std::atomic<uint32_t>& seq,
                         std::atomic<uint32_t>& sleeping, const PeerLiveness& peer_alive,
                         Deadline deadline, const std::string& peer, int spins) {
  for (int spin = 0; spin < spins; ++spin) {
    if (ready()) return ddprun::Status::Ok();
    if (spin % 64 == 63) std::this_thread::yield();
  }
  while (true) {
    const uint32_t observed = seq.load(std::memory_order_acquire);
    if (ready()) return ddprun::Status::Ok();
    if (ring.closed.load(std::memory_order_acquire)) {
      return ddprun::UnavailableError("the shared-memory link to " + peer + " was closed");
    }
    RETURN_IF_ERROR(peer_alive.Check());
    if (std::chrono::steady_clock::now() >= deadline) {
      return ddprun::DeadlineExceededError("timed out waiting for " + peer);
    }
    sleeping.store(1, std::memory_order_seq_cst);
    ddprun::Status slept = ready() ? ddprun::Status::Ok() : FutexWait(seq, observed, kSleepSlice);
    sleeping.store(0, std::memory_order_relaxed);
    if (!slept.ok()) {
      return ddprun::Status(slept.code(), "waiting for " + peer + ": " + slept.message());
    }
  }
}

// The segments this process created that still exist, by name (see ShmSegment).
ddprun::Mutex created_mu;
std::map<std::string, std::weak_ptr<ShmSegment>> created_segments GUARDED_BY(created_mu);

}  // namespace

ddprun::Result<std::shared_ptr<ShmSegment>> ShmSegment::Create(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ddprun::ErrnoError("creating shared memory " + name, errno);
  if (::ftruncate(fd, static_cast<off_t>(kSegmentBytes)) != 0) {
    const int error = errno;
    ::close(fd);
    Unlink(name, false);
    return ddprun::ErrnoError("sizing shared memory " + name + " (is /dev/shm full?)", error);
  }
  void* memory = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (memory == MAP_FAILED) {
    const int error = errno;
    Unlink(name, false);
    return ddprun::ErrnoError("mapping shared memory " + name, error);
  }
  // Default-initialized: the atomics start at zero, the 4 MiB of data are left untouched (the
  // pages stay unallocated until used; ftruncate made them zero).
  auto* ring = new (memory) ShmRing;
  std::shared_ptr<ShmSegment> segment(new ShmSegment(name, ring, true));
  ddprun::MutexLock lock(created_mu);
  std::erase_if(created_segments, [](const auto& entry) { return entry.second.expired(); });
  created_segments[name] = segment;
  return segment;
}

ddprun::Result<std::shared_ptr<ShmSegment>> ShmSegment::Open(const std::string& name) {
  {
    ddprun::MutexLock lock(created_mu);
    auto it = created_segments.find(name);
    if (it != created_segments.end()) {
      if (auto own = it->second.lock()) {
        Unlink(name, true);  // both ends have it now, as below
        return own;
      }
    }
  }
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) return ddprun::ErrnoError("opening shared memory " + name, errno);
  void* memory = ::mmap(nullptr, kSegmentBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (memory == MAP_FAILED) return ddprun::ErrnoError("mapping shared memory " + name, errno);
  // Both ends are attached: nothing is left behind in /dev/shm. Not fatal if it fails: the
  // creator unlinks it again when it lets go (ENOENT: it already has).
  Unlink(name, true);
  return std::shared_ptr<ShmSegment>(new ShmSegment(name, static_cast<ShmRing*>(memory), false));
}

ShmSegment::~ShmSegment() {
  if (::munmap(ring_, kSegmentBytes) != 0) {
    const int error = errno;
    ddprun::GetLogger("runtime")->error(
        "{}", ddprun::ErrnoError("unmapping shared memory " + name_, error).message());
  }
  if (owner_) Unlink(name_, true);  // ENOENT once the sender unlinked it: fine
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
