// Reducer: DistributedDataParallel's gradient synchronization, on raw float32 gradient buffers,
// so that any C++ training code (its own layers, its own kernels) gets bucketing and overlap.
//
// Gradients live as views in bucket buffers (GradientStorage): the caller computes (accumulates)
// each gradient there, then calls MarkReady. A bucket's all-reduce (average over the ranks) is
// launched as soon as every gradient in it is ready and every earlier bucket has been launched,
// strictly in bucket order on every rank, while backward goes on; Finish waits only for what is
// still in flight. Buckets are assigned as PyTorch does (bucket_assignment.h).
//
// On the CPU the buckets live in one registered buffer (Communicator::AllocateShared): when
// every rank is on one host, each rank's all-reduce reads its peers' buckets directly, so the
// gradients are reduced in place without passing through a ring. Elsewhere that buffer is
// ordinary memory.
//
// On a GPU (ReducerOptions::device, with the NCCL communicator) the buckets live in device memory
// and their all-reduces run on NCCL's own stream, ordered after the gradients' kernels by events;
// Finish orders the default stream after them, so the optimizer's kernels see the averages.
//
// Not thread-safe: one thread runs backward, MarkReady and Finish.
#pragma once

#include <memory>
#include <vector>

#include "ddp/bucket_assignment.h"
#include "ddp/communicator.h"
#include "ddp/device_array.h"

namespace ddp {

struct ReducerOptions {
  size_t first_bucket_bytes = kDefaultFirstBucketBytes;
  size_t bucket_bytes = kDefaultBucketBytes;  // PyTorch's bucket_cap_mb x 2^20
  // false: every all-reduce waits until backward has finished (Finish), for measuring what the
  // overlap is worth.
  bool overlap = true;
  Device device = Device::kCpu;  // where the gradients (the bucket buffers) live
  // CPU: the buckets in a registered buffer (see above); false: in ordinary memory, through the
  // ring, for measuring what the registered buffer is worth.
  bool registered_buckets = true;
};

class Reducer {
 public:
  // `gradient_sizes`: element counts of the gradients, in definition order. On the CPU this is a
  // collective (AllocateShared): every rank constructs its Reducer in the same order as its
  // other collectives.
  Reducer(Communicator& communicator, const std::vector<size_t>& gradient_sizes,
          ReducerOptions options = {});

  const std::vector<std::vector<size_t>>& buckets() const { return buckets_; }
  // Where gradient `index` lives (its size from the constructor), zero at first.
  float* GradientStorage(size_t index);
  // Gradient `index` is complete for this backward pass. Launches the buckets that can go.
  void MarkReady(size_t index);
  // Waits for every bucket of this pass. FAILED_PRECONDITION naming the gradients that were
  // never marked ready (parameters not used to compute the loss; every bucket is still reduced,
  // so the ranks' all-reduces stay in step); the error of a failed all-reduce otherwise. Then the
  // next pass may begin.
  ddprun::Status Finish();

  // With sync off (no_sync), MarkReady and Finish do nothing: gradients accumulate locally, and
  // the first pass with sync on reduces the sum.
  void set_sync(bool sync) { sync_ = sync; }
  bool sync() const { return sync_; }

 private:
  struct Location {
    size_t bucket;
    size_t offset;  // in floats
  };
  // Sets bucket_data_ into one registered buffer, unless the communicator is broken.
  void PlaceBucketsInRegisteredBuffer();
  void LaunchReadyBuckets();
  void LaunchNextBucket();

  Communicator& communicator_;
  const bool overlap_;
  const Device device_;
  const int device_index_;  // the CUDA device, for TensorViews
  std::vector<std::vector<size_t>> buckets_;
  std::vector<FloatArray> device_storage_;  // one buffer per bucket, or none (registered)
  std::shared_ptr<RegisteredBuffer> registered_storage_;  // every bucket, or null
  std::vector<float*> bucket_data_;                       // per bucket, in one of the above
  std::vector<size_t> bucket_sizes_;                      // per bucket, in floats
  std::vector<Location> locations_;                       // per gradient
  std::vector<size_t> pending_;                           // per bucket: gradients not yet ready
  std::vector<bool> ready_;                               // per gradient
  std::vector<std::shared_ptr<Work>> works_;              // per launched bucket
  size_t next_bucket_ = 0;
  bool sync_ = true;
};

}  // namespace ddp
