// The ring algorithms of the CPU backend (the seeds' Ring-AllReduce): each rank talks only to its
// neighbours, the buffer is cut into one block per rank, and blocks travel around the ring in
// segments: reduce-scatter (n-1 steps, each rank adding what its previous rank sends), then
// all-gather (n-1 steps, each rank passing on finished blocks). A segment is passed on the moment
// it has been received and reduced, so sending one segment overlaps reducing the next.
//
// Every block is reduced in one fixed order (starting at the rank after its owner, once around
// the ring) and then copied, so all ranks end with the same bits, run after run.
#pragma once

#include "ddp/tensor.h"
#include "send_queue.h"
#include "transport/link.h"

namespace ddp::cpu {

struct RingContext {
  int rank = 0;
  int world_size = 1;
  SendQueue* to_next = nullptr;   // null when world_size is 1
  RecvLink* from_prev = nullptr;  // null when world_size is 1
  Deadline deadline;
};

// Bytes of one segment: large enough to amortize a wake-up, small enough to pipeline.
constexpr size_t kSegmentBytes = 256 << 10;

// In place over `count` elements at `data`. kAvg: the owner of each block divides it by the
// world size before passing it on.
ddprun::Status RingAllReduce(const RingContext& ring, void* data, size_t count, DataType type,
                             ReduceOp op);
// `data` holds world_size blocks of `count` elements; block `rank` is this rank's already.
ddprun::Status RingAllGather(const RingContext& ring, void* data, size_t count, DataType type);
// `data` (world_size blocks of `count` elements, overwritten) is reduced; this rank's block
// `rank` holds the result.
ddprun::Status RingReduceScatter(const RingContext& ring, void* data, size_t count, DataType type,
                                 ReduceOp op);
ddprun::Status RingBroadcast(const RingContext& ring, void* data, size_t bytes, int root);

}  // namespace ddp::cpu
