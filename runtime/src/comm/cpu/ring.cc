// The ring algorithms; see ring.h.
#include "ring.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "reduce_kernels.h"

namespace ddp::cpu {
namespace {

// One pass of blocks around the ring. Blocks are [offsets[b], offsets[b+1]) in elements.
// The rank first sends block `first_sent`; then, at receive step i, it receives block
// (first_sent - 1 - i): the first `reduce_steps` steps add it into its own, the next
// `copy_steps` steps overwrite its own; every received segment but the last step's is passed on.
struct RingPass {
  const RingContext& ring;
  std::byte* base;
  const std::vector<size_t>& offsets;
  DataType type;
  ReduceOp op;
  int first_sent;
  int reduce_steps;
  int copy_steps;

  size_t element() const { return SizeOf(type); }
  std::byte* BlockData(int block) const { return base + offsets[block] * element(); }
  size_t BlockBytes(int block) const { return (offsets[block + 1] - offsets[block]) * element(); }
  int Block(int i) const {
    const int n = ring.world_size;
    return ((first_sent - 1 - i) % n + n) % n;
  }

  // The ticket of the last post of each segment of each block: a segment that is overwritten
  // (all-reduce's copy steps overwrite blocks they sent while reducing) waits for it first.
  struct SentSegments {
    std::vector<size_t> first_of_block;  // the index of each block's first segment
    std::vector<SendQueue::Ticket> tickets;

    SendQueue::Ticket& Of(int block, size_t at) {
      return tickets[first_of_block[block] + at / kSegmentBytes];
    }
  };

  SentSegments NoSegmentSent() const {
    SentSegments sent;
    sent.first_of_block.resize(offsets.size(), 0);
    for (size_t b = 0; b + 1 < offsets.size(); ++b) {
      const size_t bytes = BlockBytes(static_cast<int>(b));
      sent.first_of_block[b + 1] =
          sent.first_of_block[b] + (bytes + kSegmentBytes - 1) / kSegmentBytes;
    }
    sent.tickets.assign(sent.first_of_block.back(), 0);
    return sent;
  }

  void PostSegment(SentSegments& sent, int block, size_t at, size_t bytes) const {
    sent.Of(block, at) = ring.to_next->Post(BlockData(block) + at, bytes, ring.deadline);
  }

  void PostBlock(SentSegments& sent, int block) const {
    const size_t bytes = BlockBytes(block);
    for (size_t at = 0; at < bytes; at += kSegmentBytes) {
      PostSegment(sent, block, at, std::min(kSegmentBytes, bytes - at));
    }
  }

  ddprun::Status Run() const {
    if (ring.world_size == 1) return ddprun::Status::Ok();
    SentSegments sent = NoSegmentSent();
    PostBlock(sent, first_sent);
    const int steps = reduce_steps + copy_steps;
    for (int i = 0; i < steps; ++i) {
      const int block = Block(i);
      const bool reducing = i < reduce_steps;
      const bool finishing = reducing && i == reduce_steps - 1;  // the block is complete here
      const bool forwarding = i < steps - 1;
      std::byte* data = BlockData(block);
      const size_t bytes = BlockBytes(block);
      for (size_t at = 0; at < bytes; at += kSegmentBytes) {
        const size_t segment = std::min(kSegmentBytes, bytes - at);
        std::byte* target = data + at;
        if (!reducing) ring.to_next->WaitSent(sent.Of(block, at));  // it may be one we sent
        auto consume = [&](const std::byte* piece, size_t piece_bytes) {
          if (reducing) {
            ReduceInto(type, op, target, piece, piece_bytes / element());
          } else {
            std::memcpy(target, piece, piece_bytes);
          }
          target += piece_bytes;
        };
        if (auto s = ring.from_prev->Receive(segment, ring.deadline, consume); !s.ok()) {
          ring.to_next->Abort(s);  // the sender must stop reading our buffers before we return
          return s;
        }
        if (finishing && op == ReduceOp::kAvg) {
          DivideInPlace(type, data + at, segment / element(), ring.world_size);
        }
        if (forwarding) PostSegment(sent, block, at, segment);
      }
    }
    return ring.to_next->Flush();
  }
};

// Offsets of world_size nearly equal blocks of `count` elements (the first ones one larger).
std::vector<size_t> SplitEvenly(size_t count, int world_size) {
  std::vector<size_t> offsets(static_cast<size_t>(world_size) + 1, 0);
  const size_t base = count / static_cast<size_t>(world_size);
  const size_t extra = count % static_cast<size_t>(world_size);
  for (size_t b = 0; b < static_cast<size_t>(world_size); ++b) {
    offsets[b + 1] = offsets[b] + base + (b < extra ? 1 : 0);
  }
  return offsets;
}

// Offsets of world_size blocks of exactly `count` elements.
std::vector<size_t> SplitBlocks(size_t count, int world_size) {
  std::vector<size_t> offsets(static_cast<size_t>(world_size) + 1, 0);
  for (size_t b = 1; b < offsets.size(); ++b) offsets[b] = b * count;
  return offsets;
}

}  // namespace

ddprun::Status RingAllReduce(const RingContext& ring, void* data, size_t count, DataType type,
                             ReduceOp op) {
  const int n = ring.world_size;
  const auto offsets = SplitEvenly(count, n);
  if (n == 1) return ddprun::Status::Ok();  // the sum, min, max or average of one is itself
  return RingPass{ring, static_cast<std::byte*>(data), offsets, type, op, ring.rank, n - 1, n - 1}
      .Run();
}

ddprun::Status RingAllGather(const RingContext& ring, void* data, size_t count, DataType type) {
  const auto offsets = SplitBlocks(count, ring.world_size);
  return RingPass{ring,
                  static_cast<std::byte*>(data),
                  offsets,
                  type,
                  ReduceOp::kSum,
                  ring.rank,
                  0,
                  ring.world_size - 1}
      .Run();
}

ddprun::Status RingReduceScatter(const RingContext& ring, void* data, size_t count, DataType type,
                                 ReduceOp op) {
  const int n = ring.world_size;
  const auto offsets = SplitBlocks(count, n);
  // Sending block rank-1 first makes this rank finish block `rank` after n-1 steps.
  return RingPass{ring, static_cast<std::byte*>(data), offsets, type,
                  op,   (ring.rank + n - 1) % n,       n - 1,   0}
      .Run();
}

ddprun::Status RingBroadcast(const RingContext& ring, void* data, size_t bytes, int root) {
  const int n = ring.world_size;
  if (n == 1) return ddprun::Status::Ok();
  auto* base = static_cast<std::byte*>(data);
  const bool forwarding = (ring.rank + 1) % n != root;  // the last rank before the root stops
  for (size_t at = 0; at < bytes; at += kSegmentBytes) {
    const size_t segment = std::min(kSegmentBytes, bytes - at);
    if (ring.rank != root) {
      std::byte* target = base + at;
      auto consume = [&](const std::byte* piece, size_t piece_bytes) {
        std::memcpy(target, piece, piece_bytes);
        target += piece_bytes;
      };
      if (auto s = ring.from_prev->Receive(segment, ring.deadline, consume); !s.ok()) {
        ring.to_next->Abort(s);  // the sender must stop reading the tensor before we return
        return s;
      }
    }
    if (forwarding) ring.to_next->Post(base + at, segment, ring.deadline);
  }
  return ring.to_next->Flush();
}

}  // namespace ddp::cpu
