// SymmetricBuffer: one registered buffer as every rank of a group on one host sees it: its own
// slice (shared memory it created) and every peer's slice, mapped here too, each behind a small
// header through which the ranks synchronize the collectives that work on the slices directly
// (direct_collectives.h).
//
// Synchronization. Each rank's header has one counter, `step`, that only that rank advances and
// its peers wait on (spinning briefly, then sleeping on it as a futex). Collectives on the buffer
// are numbered in the order issued, the same on every rank; collective k moves every rank's step
// through fixed values in [k * kStepsPerOp, (k + 1) * kStepsPerOp):
//   arrived (Begin):        this rank's slice holds its input, and it has stopped touching peers'
//                           slices for every earlier collective;
//   chunk c done (Publish): this rank has finished writing chunk c of what it owns;
//   finished (Finish):      this rank will not read or write any peer's slice again in this
//                           collective.
// A collective returns only when every rank has finished it, so when a rank's Work is done no
// peer touches its slice any more and the caller may write it again; and no rank reads a peer's
// input before that peer has arrived. Steps are compared modulo 2^32 (ranks are never more than
// one collective apart, far less than 2^31 steps).
//
// Failure: Close marks this rank's header closed and wakes its waiters; a rank waiting on a peer
// that closed, died (its pid) or did not come before the deadline fails with that reason, and
// its communicator closes its own, so the failure spreads to every rank. A waiter that is woken
// sees it at once; one that was about to sleep when the close came (the futex watches the step,
// which a close does not change) sees it when its sleep slice ends, 50 ms at most.
//
// Thread-compatible: the communicator's loop thread runs the collectives; Close may be called
// from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddp/tensor.h"
#include "transport/futex.h"
#include "transport/link.h"
#include "transport/peer_liveness.h"
#include "transport/shared_mapping.h"

namespace ddp::cpu {

// What a collective on the buffer is, as every rank must issue it.
struct DirectOperation {
  enum class Kind : uint32_t { kAllReduce, kBroadcast, kAllGather, kReduceScatter };
  Kind kind = Kind::kAllReduce;
  DataType type = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int32_t root = 0;     // broadcast
  uint64_t offset = 0;  // of the tensor in every rank's slice, in bytes
  uint64_t count = 0;   // elements

  bool operator==(const DirectOperation&) const = default;
  std::string Describe() const;  // "all_reduce sum of 1024 float32 at byte 4096"
};

class SymmetricBuffer {
 public:
  // Chunks a rank can publish in one collective.
  static constexpr uint32_t kStepsPerOp = 1u << 12;
  static constexpr size_t kMaxChunks = kStepsPerOp - 3;

  // This rank's slice of `bytes` bytes (pages reserved), under a new unique name; the peers are
  // mapped later (OpenPeers). `first_operation`, the number of the first collective, is for
  // tests, to cross the steps' wrap at 2^32 (every rank must pass the same).
  static ddprun::Result<std::unique_ptr<SymmetricBuffer>> Create(int rank, int world_size,
                                                                 size_t bytes,
                                                                 uint64_t first_operation = 0);
  ~SymmetricBuffer();  // closes (see Close), then unmaps every slice

  // Maps every peer's slice; `names[r]` is what rank r's name() was. Each must be as large.
  ddprun::Status OpenPeers(const std::vector<std::string>& names);
  // Removes this rank's name from /dev/shm, once every peer has mapped it.
  void UnlinkOwn() { slices_[rank_]->Unlink(); }

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  const std::string& name() const { return slices_[rank_]->name(); }
  size_t bytes() const { return bytes_; }
  // Rank `r`'s slice (this rank's own, or a peer's as mapped here).
  std::byte* slice(int r) const { return slice_data_[r]; }

  // Tells the peers which of the communicator's collectives this rank runs now (`number`,
  // counted alike on every rank) and whether it runs on this buffer. The communicator calls it
  // on each of its registered buffers before each collective, whatever its path: a rank waiting
  // here for a peer that runs the same collective elsewhere (its tensor in ordinary memory, or
  // in another registered buffer) then fails at once instead of at the deadline.
  void AnnounceCollective(uint64_t number, bool on_this_buffer);

  // Starts the next collective: announces `operation` and this rank's arrival, then waits until
  // every peer has arrived at the same collective. INVALID_ARGUMENT when a peer issued a
  // different one, or (after AnnounceCollective) runs this collective outside this buffer.
  ddprun::Status Begin(const DirectOperation& operation, Deadline deadline);
  // This rank has finished chunk `chunk` (< kMaxChunks) of its part; wakes who waits for it.
  void PublishChunk(size_t chunk);
  // Waits until rank `peer` has published chunk `chunk` of the current collective.
  ddprun::Status AwaitChunk(int peer, size_t chunk);
  // Whether it has, without waiting (what AwaitChunk returning OK would order, this orders too).
  bool ChunkPublished(int peer, size_t chunk) const;
  // Ends the collective: announces that this rank is done, and waits until every peer is.
  ddprun::Status Finish();

  // Fails this rank's waits, and its peers' waits on it (within 50 ms, see above). Any thread.
  void Close();

 private:
  struct Header;
  SymmetricBuffer(int rank, int world_size, size_t bytes);
  Header& header(int r) const;
  void Publish(uint32_t step);
  // `arrival`: waiting for the peer to begin the current collective here.
  ddprun::Status Await(int peer, uint32_t step, SpinBudget spin, bool arrival = false);
  // OK, or why rank `peer` is not coming to this buffer's current collective.
  ddprun::Status CheckPeerRunsThisCollectiveHere(int peer) const;

  const int rank_;
  const int world_size_;
  const size_t bytes_;
  std::vector<std::shared_ptr<SharedMapping>> slices_;      // by rank
  std::vector<std::byte*> slice_data_;                      // by rank
  std::vector<std::unique_ptr<PeerLiveness>> peers_alive_;  // by rank; null for this rank
  uint64_t operations_ = 0;                                 // collectives begun
  uint32_t base_ = 0;                                       // the current collective's first step
  Deadline deadline_;
};

}  // namespace ddp::cpu
