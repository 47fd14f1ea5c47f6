// SymmetricBuffer; see symmetric_buffer.h.
#include "direct/symmetric_buffer.h"

#include <unistd.h>

#include <climits>

#include "ddprun/base/rank_shared_memory.h"
#include "ddprun/base/status_macros.h"
#include "transport/futex.h"

namespace ddp::cpu {

// The first page of every rank's slice. Written only by its rank, except `sleepers`, which the
// peers that sleep on `step` count themselves in.
struct SymmetricBuffer::Header {
  alignas(64) std::atomic<uint32_t> step;  // futex word; see the header file
  std::atomic<uint32_t> sleepers;
  alignas(64) std::atomic<uint32_t> closed;
  pid_t pid;
  DirectOperation operation;  // the current collective, written before its arrival
  // The communicator's collective this rank runs now, times 2, plus 1 when on this buffer
  // (AnnounceCollective); 0 before the first.
  std::atomic<uint64_t> collective;
};

namespace {

constexpr size_t kHeaderBytes = 4096;  // the data stays page-aligned
// Shared between processes: the atomics must be plain words, with no lock inside.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
static_assert(std::atomic<uint32_t>::is_always_lock_free);

// How long to spin before sleeping. Waking a sleeper costs tens of microseconds here (a futex
// wake and, on a virtual machine, an interrupt between cores), which a collective would pay at
// every chunk once one rank falls asleep; so a rank spins longer than the ring's receiver does:
// for a peer's arrival, 50 us, which back-to-back collectives meet; within a collective, where
// the peer has arrived and is working, 250 us, longer than a chunk takes. A rank spins only
// while it has nothing else to do; what it costs is a core the peer, or this rank's own
// backward pass, might have used for that long.
constexpr SpinBudget kArrivalSpin{200, std::chrono::microseconds(50)};
constexpr SpinBudget kWithinCollectiveSpin{200, std::chrono::microseconds(250)};

constexpr uint32_t kArrived = 1;
constexpr uint32_t kFirstChunk = 2;
constexpr uint32_t kFinished = SymmetricBuffer::kStepsPerOp - 1;

bool Reached(uint32_t step, uint32_t target) { return static_cast<int32_t>(step - target) >= 0; }

size_t RoundUpToPage(size_t bytes) {
  return (bytes + kHeaderBytes - 1) / kHeaderBytes * kHeaderBytes;
}

std::string RankName(int rank) { return "rank " + std::to_string(rank); }

}  // namespace

std::string DirectOperation::Describe() const {
  std::string what;
  switch (kind) {
    case Kind::kAllReduce:
      what = std::string("all_reduce ") + NameOf(op);
      break;
    case Kind::kBroadcast:
      what = "broadcast from rank " + std::to_string(root);
      break;
    case Kind::kAllGather:
      what = "all_gather";
      break;
    case Kind::kReduceScatter:
      what = std::string("reduce_scatter ") + NameOf(op);
      break;
  }
  return what + " of " + std::to_string(count) + " " + NameOf(type) + " at byte " +
         std::to_string(offset);
}

SymmetricBuffer::SymmetricBuffer(int rank, int world_size, size_t bytes)
    : rank_(rank),
      world_size_(world_size),
      bytes_(bytes),
      slices_(static_cast<size_t>(world_size)),
      slice_data_(static_cast<size_t>(world_size), nullptr),
      peers_alive_(static_cast<size_t>(world_size)) {}

SymmetricBuffer::~SymmetricBuffer() {
  // A peer still waiting on this rank (it issued a collective this rank never will) fails now,
  // rather than at its deadline. One that waits for a step already reached is not disturbed.
  if (slice_data_[rank_] != nullptr) Close();
}

ddprun::Result<std::unique_ptr<SymmetricBuffer>> SymmetricBuffer::Create(int rank, int world_size,
                                                                         size_t bytes,
                                                                         uint64_t first_operation) {
  std::unique_ptr<SymmetricBuffer> buffer(new SymmetricBuffer(rank, world_size, bytes));
  buffer->operations_ = first_operation;
  ASSIGN_OR_RETURN(buffer->slices_[rank],
                   SharedMapping::Create(ddprun::NewRankSharedMemoryName("registered"),
                                         kHeaderBytes + RoundUpToPage(bytes), /*reserve=*/true));
  auto* base = static_cast<std::byte*>(buffer->slices_[rank]->data());
  buffer->slice_data_[rank] = base + kHeaderBytes;
  static_assert(sizeof(Header) <= kHeaderBytes);
  Header* header = new (base) Header;
  header->pid = ::getpid();
  // As if the collective before the first had finished: below every step of the first.
  header->step.store(static_cast<uint32_t>(first_operation * kStepsPerOp) - 1);
  return buffer;
}

SymmetricBuffer::Header& SymmetricBuffer::header(int r) const {
  return *reinterpret_cast<Header*>(slice_data_[r] - kHeaderBytes);
}

ddprun::Status SymmetricBuffer::OpenPeers(const std::vector<std::string>& names) {
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    auto mapping = SharedMapping::Open(names[r], kHeaderBytes + RoundUpToPage(bytes_));
    if (!mapping.ok()) {
      return ddprun::Status(
          mapping.status().code(),
          "mapping " + RankName(r) + "'s registered buffer: " + mapping.status().message());
    }
    slices_[r] = std::move(mapping).value();
    slice_data_[r] = static_cast<std::byte*>(slices_[r]->data()) + kHeaderBytes;
    peers_alive_[r] = std::make_unique<PeerLiveness>(header(r).pid, RankName(r));
  }
  return ddprun::Status::Ok();
}

void SymmetricBuffer::Publish(uint32_t step) {
  Header& own = header(rank_);
  own.step.store(step, std::memory_order_seq_cst);
  if (own.sleepers.load(std::memory_order_seq_cst) != 0) FutexWake(own.step, INT_MAX);
}

ddprun::Status SymmetricBuffer::Await(int peer, uint32_t step, SpinBudget spin, bool arrival) {
  Header& theirs = header(peer);
  auto ready = [&] { return Reached(theirs.step.load(std::memory_order_acquire), step); };
  auto still_waiting = [&]() -> ddprun::Status {
    if (theirs.closed.load(std::memory_order_acquire)) {
      return ddprun::UnavailableError(RankName(peer) +
                                      " closed its registered buffer (it failed or left)");
    }
    if (header(rank_).closed.load(std::memory_order_acquire)) {
      return ddprun::UnavailableError("this rank's registered buffer was closed");
    }
    RETURN_IF_ERROR(peers_alive_[peer]->Check());
    if (arrival) RETURN_IF_ERROR(CheckPeerRunsThisCollectiveHere(peer));
    if (std::chrono::steady_clock::now() >= deadline_) {
      return ddprun::DeadlineExceededError("timed out waiting for " + RankName(peer) +
                                           " in a collective on a registered buffer");
    }
    return ddprun::Status::Ok();
  };
  return SpinThenSleep(theirs.step, theirs.sleepers, spin, kFutexSleepSlice, "a registered buffer",
                       ready, still_waiting);
}

void SymmetricBuffer::AnnounceCollective(uint64_t number, bool on_this_buffer) {
  // Before this rank's arrival (Begin's release orders it): a peer that sees this collective
  // announced on this buffer keeps waiting for the arrival.
  header(rank_).collective.store(number * 2 + (on_this_buffer ? 1 : 0), std::memory_order_release);
}

ddprun::Status SymmetricBuffer::CheckPeerRunsThisCollectiveHere(int peer) const {
  // This rank's own word, which only this thread writes.
  const uint64_t mine = header(rank_).collective.load(std::memory_order_relaxed);
  if (mine % 2 == 0) return ddprun::Status::Ok();  // not announced here: only the deadline
  const uint64_t number = mine / 2;
  const uint64_t theirs = header(peer).collective.load(std::memory_order_acquire);
  // A peer at this collective elsewhere, or past it (a ring broadcast's root moves on without
  // waiting for the others), will not come. One at this collective here, or before it, will.
  if (theirs / 2 < number || theirs == mine) return ddprun::Status::Ok();
  return ddprun::InvalidArgumentError(
      RankName(peer) + " runs collective #" + std::to_string(theirs / 2) +
      " outside this registered buffer while this rank's collective #" + std::to_string(number) +
      " is on a tensor in it: every rank's tensor must lie in a registered buffer, at the same "
      "offset, or none's");
}

ddprun::Status SymmetricBuffer::Begin(const DirectOperation& operation, Deadline deadline) {
  deadline_ = deadline;
  base_ = static_cast<uint32_t>(operations_ * kStepsPerOp);  // modulo 2^32, as compared
  ++operations_;
  header(rank_).operation = operation;  // published by the release of the arrival below
  Publish(base_ + kArrived);
  for (int r = 0; r < world_size_; ++r) {
    if (r == rank_) continue;
    RETURN_IF_ERROR(Await(r, base_ + kArrived, kArrivalSpin, /*arrival=*/true));
    // Stable until this rank finishes: the peer cannot begin another collective before that.
    const DirectOperation& theirs = header(r).operation;
    if (!(theirs == operation)) {
      return ddprun::InvalidArgumentError(
          RankName(rank_) + " issued " + operation.Describe() + " on a registered buffer where " +
          RankName(r) + " issued " + theirs.Describe() +
          ": every rank must issue the same collectives, on tensors at the same offset");
    }
  }
  return ddprun::Status::Ok();
}

void SymmetricBuffer::PublishChunk(size_t chunk) {
  Publish(base_ + kFirstChunk + static_cast<uint32_t>(chunk));
}

ddprun::Status SymmetricBuffer::AwaitChunk(int peer, size_t chunk) {
  return Await(peer, base_ + kFirstChunk + static_cast<uint32_t>(chunk), kWithinCollectiveSpin);
}

bool SymmetricBuffer::ChunkPublished(int peer, size_t chunk) const {
  return Reached(header(peer).step.load(std::memory_order_acquire),
                 base_ + kFirstChunk + static_cast<uint32_t>(chunk));
}

ddprun::Status SymmetricBuffer::Finish() {
  Publish(base_ + kFinished);
  for (int r = 0; r < world_size_; ++r) {
    if (r != rank_) RETURN_IF_ERROR(Await(r, base_ + kFinished, kWithinCollectiveSpin));
  }
  return ddprun::Status::Ok();
}

void SymmetricBuffer::Close() {
  Header& own = header(rank_);
  own.closed.store(1, std::memory_order_seq_cst);
  // Whoever sleeps on any slice's step wakes to look: the peers waiting on this rank, and this
  // rank's own loop thread waiting on a peer (when another thread closes).
  for (int r = 0; r < world_size_; ++r) {
    if (slice_data_[r] != nullptr) FutexWake(header(r).step, INT_MAX);
  }
}

}  // namespace ddp::cpu
