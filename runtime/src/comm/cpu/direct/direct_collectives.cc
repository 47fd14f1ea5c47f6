// The collectives on registered buffers; see direct_collectives.h.
#include "direct/direct_collectives.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "ddprun/base/status_macros.h"
#include "reduce_kernels.h"

namespace ddp::cpu {
namespace {

// Chunks: large enough that publishing one costs little, small enough that the chunks in
// flight (a few per rank) stay in the cache for the copy that follows.
constexpr size_t kChunkBytes = 128 << 10;
// How many of a peer's chunks a rank may leave uncopied behind the chunk it has just reduced
// before it waits for that peer.
constexpr size_t kMaxLead = 2;
// Blocks start on cache lines, so no two ranks' blocks share one.
constexpr size_t kLineBytes = 64;

// Offsets (bytes) of world_size blocks covering `bytes`, each but the last a whole number of
// cache lines, as equal as that allows.
std::vector<size_t> SplitIntoBlocks(size_t bytes, int world_size) {
  const size_t lines = (bytes + kLineBytes - 1) / kLineBytes;
  const size_t per_block = (lines + static_cast<size_t>(world_size) - 1) / world_size;
  std::vector<size_t> offsets(static_cast<size_t>(world_size) + 1, bytes);
  for (size_t b = 0; b < offsets.size(); ++b)
    offsets[b] = std::min(bytes, b * per_block * kLineBytes);
  return offsets;
}

// The chunk size for blocks of at most `largest_block` bytes: kChunkBytes, or larger so that
// no block has more chunks than a collective can publish. A multiple of every element size.
size_t ChunkBytesFor(size_t largest_block) {
  const size_t needed =
      (largest_block + SymmetricBuffer::kMaxChunks - 1) / SymmetricBuffer::kMaxChunks;
  return std::max(kChunkBytes, (needed + kLineBytes - 1) / kLineBytes * kLineBytes);
}

DirectOperation Operation(DirectOperation::Kind kind, size_t offset, size_t count, DataType type,
                          ReduceOp op = ReduceOp::kSum, int root = 0) {
  return DirectOperation{kind, type, op, root, offset, count};
}

// dst = sources[0] op sources[1] op ... in that order, `bytes` bytes of `type`; dst may be
// sources[0] itself (and then is not copied).
void ReduceOrdered(DataType type, ReduceOp op, std::byte* dst,
                   const std::vector<const std::byte*>& sources, size_t bytes) {
  if (dst != sources[0]) std::memmove(dst, sources[0], bytes);
  for (size_t i = 1; i < sources.size(); ++i) {
    ReduceInto(type, op, dst, sources[i], bytes / SizeOf(type));
  }
  if (op == ReduceOp::kAvg) {
    DivideInPlace(type, dst, bytes / SizeOf(type), static_cast<int>(sources.size()));
  }
}

// The slices' bytes at `at`, in the fixed reduction order of block `owner`.
std::vector<const std::byte*> InOrderFrom(const SymmetricBuffer& buffer, int owner, size_t at) {
  std::vector<const std::byte*> sources;
  for (int k = 0; k < buffer.world_size(); ++k) {
    sources.push_back(buffer.slice((owner + k) % buffer.world_size()) + at);
  }
  return sources;
}

}  // namespace

ddprun::Status DirectAllReduce(SymmetricBuffer& buffer, size_t offset, size_t count, DataType type,
                               ReduceOp op, Deadline deadline) {
  const int n = buffer.world_size();
  const int rank = buffer.rank();
  RETURN_IF_ERROR(buffer.Begin(
      Operation(DirectOperation::Kind::kAllReduce, offset, count, type, op), deadline));
  const auto blocks = SplitIntoBlocks(count * SizeOf(type), n);
  const size_t chunk_bytes = ChunkBytesFor(blocks[1] - blocks[0]);
  auto chunks_of = [&](int block) {
    return (blocks[block + 1] - blocks[block] + chunk_bytes - 1) / chunk_bytes;
  };
  std::byte* own = buffer.slice(rank) + offset;
  // Copies chunk c of `peer`'s block, which its owner has published (and so has finished reading
  // this rank's copy of it, which is overwritten here).
  auto copy_chunk = [&](int peer, size_t c) {
    const size_t from = blocks[peer] + c * chunk_bytes;
    std::memcpy(own + from, buffer.slice(peer) + offset + from,
                std::min(chunk_bytes, blocks[peer + 1] - from));
  };
  std::vector<size_t> copied(static_cast<size_t>(n), 0);  // chunks of each peer's block
  for (size_t c = 0; c < chunks_of(rank); ++c) {
    // Reduce chunk c of this rank's block. The peers read their own copies of it here, which
    // none of them overwrites before this rank publishes the chunk.
    const size_t start = blocks[rank] + c * chunk_bytes;
    const size_t bytes = std::min(chunk_bytes, blocks[rank + 1] - start);
    ReduceOrdered(type, op, own + start, InOrderFrom(buffer, rank, offset + start), bytes);
    buffer.PublishChunk(c);
    // Copy the peers' chunks that are ready: when the peers run alongside, these are what they
    // have just written, still in the shared cache. A peer that falls behind (its core taken
    // a moment by its backward pass) is not waited for until this rank is kMaxLead chunks ahead
    // of it; then it is, so that the ranks keep sharing the work evenly (a rank that ran far
    // ahead would leave the other reducing and copying alone, and waking it chunk by chunk).
    // No two ranks wait for each other: each waits only for a chunk the other has passed by
    // more than kMaxLead, and both cannot be that far ahead of the other.
    for (int k = 1; k < n; ++k) {
      const int peer = (rank + k) % n;
      size_t& next = copied[static_cast<size_t>(peer)];
      while (next < chunks_of(peer) &&
             (buffer.ChunkPublished(peer, next) || next + kMaxLead < c + 1)) {
        RETURN_IF_ERROR(buffer.AwaitChunk(peer, next));
        copy_chunk(peer, next++);
      }
    }
  }
  for (int k = 1; k < n; ++k) {
    const int peer = (rank + k) % n;
    for (size_t& next = copied[static_cast<size_t>(peer)]; next < chunks_of(peer); ++next) {
      RETURN_IF_ERROR(buffer.AwaitChunk(peer, next));
      copy_chunk(peer, next);
    }
  }
  return buffer.Finish();
}

ddprun::Status DirectBroadcast(SymmetricBuffer& buffer, size_t offset, size_t count, DataType type,
                               int root, Deadline deadline) {
  RETURN_IF_ERROR(buffer.Begin(
      Operation(DirectOperation::Kind::kBroadcast, offset, count, type, ReduceOp::kSum, root),
      deadline));
  if (buffer.rank() != root && count > 0) {
    std::memcpy(buffer.slice(buffer.rank()) + offset, buffer.slice(root) + offset,
                count * SizeOf(type));
  }
  return buffer.Finish();
}

ddprun::Status DirectAllGather(SymmetricBuffer& buffer, size_t offset, size_t count, DataType type,
                               void* output, Deadline deadline) {
  RETURN_IF_ERROR(
      buffer.Begin(Operation(DirectOperation::Kind::kAllGather, offset, count, type), deadline));
  const size_t bytes = count * SizeOf(type);
  for (int r = 0; r < buffer.world_size() && bytes > 0; ++r) {
    std::byte* to = static_cast<std::byte*>(output) + static_cast<size_t>(r) * bytes;
    const std::byte* from = buffer.slice(r) + offset;
    if (to != from) std::memmove(to, from, bytes);  // this rank's own input may overlap
  }
  return buffer.Finish();
}

ddprun::Status DirectReduceScatter(SymmetricBuffer& buffer, size_t offset, size_t count,
                                   DataType type, ReduceOp op, void* output, Deadline deadline) {
  RETURN_IF_ERROR(buffer.Begin(
      Operation(DirectOperation::Kind::kReduceScatter, offset, count, type, op), deadline));
  const size_t bytes = count * SizeOf(type);
  if (bytes > 0) {
    const size_t block = offset + static_cast<size_t>(buffer.rank()) * bytes;
    ReduceOrdered(type, op, static_cast<std::byte*>(output),
                  InOrderFrom(buffer, buffer.rank(), block), bytes);
  }
  return buffer.Finish();
}

}  // namespace ddp::cpu
