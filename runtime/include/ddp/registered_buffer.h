// ddp::RegisteredBuffer: memory for tensors that a communicator's collectives reduce in place
// without copying through a ring (Communicator::AllocateShared). On the CPU backend, when every
// rank of the group runs on one host, each rank's buffer is shared memory that every other rank
// maps too, and collectives on tensors inside it read the peers' memory directly (the way NCCL's
// registered buffers and PyTorch's symmetric memory work on GPUs). Elsewhere it is ordinary
// memory, and collectives on it take the backend's usual path: code that allocates this way
// runs everywhere.
//
// Lifetime: the buffer lives as long as its last reference, independently on each rank (a peer
// that reads it keeps its own mapping of the pages). A tensor in it must stay untouched while a
// collective on it runs, as for any tensor; once the collective's Work is done no peer reads or
// writes this rank's buffer any more, so the rank may write it again. The peers read a
// collective's input until it is done, so the output of an all_gather or reduce_scatter whose
// input is in a registered buffer must not overlap that input (an all_gather exactly in place
// excepted: the input is the rank's own block of the output). Thread-compatible: the
// memory itself is the caller's to synchronize.
#pragma once

#include <cstddef>

namespace ddp {

class RegisteredBuffer {
 public:
  virtual ~RegisteredBuffer() = default;

  // `bytes()` bytes, zero at first, aligned to a page.
  virtual void* data() const = 0;
  virtual size_t bytes() const = 0;
  // Whether the peers map this memory, so that collectives on it read it directly.
  virtual bool direct() const = 0;
};

}  // namespace ddp
