// The collectives on registered buffers (every rank on one host): each rank reads its peers'
// slices directly instead of passing segments through a ring, so an all-reduce touches each
// byte about as often as the arithmetic needs. The synchronization is SymmetricBuffer's.
//
// All-reduce: the buffer is cut into one block per rank and each block into chunks. Rank r owns
// block r: for each chunk it reduces the peers' copies into its own, in a fixed order (its own
// first, then the ranks after it around the ring), and publishes the chunk; it then copies each
// peer's finished chunk of that peer's block. Every element is reduced once, by its owner, and
// copied from there, so every rank gets the same bits, run after run. Chunk c of every block is
// done at about the same time on every rank, so the copies read what the owner has just written,
// from the shared cache rather than from memory.
//
// `offset` is the tensor's byte offset in every rank's slice (the same on every rank).
#pragma once

#include "direct/symmetric_buffer.h"

namespace ddp::cpu {

ddprun::Status DirectAllReduce(SymmetricBuffer& buffer, size_t offset, size_t count, DataType type,
                               ReduceOp op, Deadline deadline);
// Every rank copies root's tensor.
ddprun::Status DirectBroadcast(SymmetricBuffer& buffer, size_t offset, size_t count, DataType type,
                               int root, Deadline deadline);
// `output` (world_size x count elements) receives every rank's input, read from their slices.
// The peers read this rank's input until the collective ends, so `output` must not overlap it,
// except exactly in place (the input is block `rank` of the output).
ddprun::Status DirectAllGather(SymmetricBuffer& buffer, size_t offset, size_t count, DataType type,
                               void* output, Deadline deadline);
// The input is world_size blocks of `count` elements at `offset`; `output` (count elements)
// receives block `rank` reduced over every rank, in the same fixed order as the all-reduce. The
// input is left as it was. The peers read all of it until the collective ends, so `output` must
// not overlap the input.
ddprun::Status DirectReduceScatter(SymmetricBuffer& buffer, size_t offset, size_t count,
                                   DataType type, ReduceOp op, void* output, Deadline deadline);

}  // namespace ddp::cpu
