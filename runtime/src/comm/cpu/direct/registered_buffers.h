// RegisteredBuffers: the CPU communicator's registered buffers (Communicator::AllocateShared):
// allocating one, finding the one a tensor lies in, and closing them all when the communicator
// breaks.
//
// Allocating is a collective run on the communicator's loop thread, over the ring: every rank
// creates its slice (when both its ring links are shared memory), the ranks exchange the slices'
// names (an all-gather), each maps its peers', and an all-reduce tells every rank whether all of
// them succeeded; only then are the names removed from /dev/shm. Every rank thus reaches the
// same verdict: direct buffers on every rank, or ordinary memory on every rank.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "ddp/registered_buffer.h"
#include "ddprun/base/thread_annotations.h"
#include "direct/symmetric_buffer.h"
#include "ring.h"

namespace ddp::cpu {

class RegisteredBuffers {
 public:
  // The collective described above; on the loop thread. `shm_both_ways`: this rank's links to
  // both neighbours are shared memory. An error only when the ring fails.
  ddprun::Result<std::shared_ptr<RegisteredBuffer>> Allocate(const RingContext& ring,
                                                             bool shm_both_ways, size_t bytes);

  struct Found {
    std::shared_ptr<SymmetricBuffer> buffer;  // kept mapped while the collective runs
    size_t offset = 0;                        // of the tensor in the slice, in bytes
  };
  // The registered buffer that holds all of `tensor`, if one does. Any thread.
  std::optional<Found> Find(const TensorView& tensor);

  // Before each of the communicator's collectives, numbered from 1 alike on every rank: tells
  // every buffer's peers (SymmetricBuffer::AnnounceCollective) whether it runs on that buffer
  // (`on`, or none). On the loop thread.
  void AnnounceCollective(uint64_t number, const SymmetricBuffer* on);

  // Closes every buffer still in use (SymmetricBuffer::Close). Any thread.
  void CloseAll();

 private:
  ddprun::Mutex mu_;
  std::vector<std::weak_ptr<SymmetricBuffer>> buffers_ GUARDED_BY(mu_);
};

}  // namespace ddp::cpu
