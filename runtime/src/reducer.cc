// Reducer; see reducer.h.
#include "ddp/reducer.h"

#include <algorithm>

#include "ops/cuda/cuda_ops.h"

namespace ddp {

Reducer::Reducer(Communicator& communicator, const std::vector<size_t>& gradient_sizes,
                 ReducerOptions options)
    : communicator_(communicator),
      overlap_(options.overlap),
      device_(options.device),
      device_index_(options.device == Device::kCuda ? cuda::CurrentDevice() : 0),
      locations_(gradient_sizes.size()),
      ready_(gradient_sizes.size()) {
  std::vector<ParameterSpec> specs;
  for (size_t count : gradient_sizes) {
    specs.push_back({count, DataType::kFloat32, device_, device_index_});
  }
  buckets_ = AssignBuckets(specs, options.first_bucket_bytes, options.bucket_bytes);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    size_t offset = 0;
    for (size_t index : buckets_[b]) {
      locations_[index] = {b, offset};
      offset += gradient_sizes[index];
    }
    storage_.emplace_back(offset, 0.0f, device_);
    pending_.push_back(buckets_[b].size());
  }
}

float* Reducer::GradientStorage(size_t index) {
  const Location& at = locations_[index];
  return storage_[at.bucket].data() + at.offset;
}

void Reducer::MarkReady(size_t index) {
  if (!sync_ || ready_[index]) return;
  ready_[index] = true;
  --pending_[locations_[index].bucket];
  if (overlap_) LaunchReadyBuckets();
}

void Reducer::LaunchReadyBuckets() {
  // Strictly in bucket order: every rank must issue the same all-reduces in the same order,
  // whatever order its gradients became ready in.
  while (next_bucket_ < buckets_.size() && pending_[next_bucket_] == 0) LaunchNextBucket();
}

void Reducer::LaunchNextBucket() {
  FloatArray& buffer = storage_[next_bucket_];
  const TensorView bucket{buffer.data(), buffer.size(), DataType::kFloat32, device_, device_index_};
  works_.push_back(communicator_.AllReduceAsync(bucket, ReduceOp::kAvg));
  ++next_bucket_;
}

ddprun::Status Reducer::Finish() {
  if (!sync_) return ddprun::Status::Ok();
  LaunchReadyBuckets();  // without overlap, everything goes now
  std::vector<size_t> missing;
  for (size_t i = 0; i < ready_.size(); ++i) {
    if (!ready_[i]) missing.push_back(i);
  }
  // Every rank must issue every bucket's all-reduce, in order, even when this pass failed here:
  // a rank that skipped one would pair its next all-reduce with another rank's different bucket.
  while (next_bucket_ < buckets_.size()) LaunchNextBucket();
  ddprun::Status result;
  for (auto& work : works_) {
    if (auto s = work->Wait(); !s.ok() && result.ok()) result = s;
  }
  // The next pass starts afresh.
  works_.clear();
  next_bucket_ = 0;
  std::fill(ready_.begin(), ready_.end(), false);
  for (size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].size();
  if (!missing.empty()) {
    std::string list;
    for (size_t i : missing) list += (list.empty() ? "" : ", ") + std::to_string(i);
    return ddprun::FailedPreconditionError(
        "Expected every parameter to receive a gradient in this backward pass, but parameter "
        "indices [" +
        list + "] did not on rank " + std::to_string(communicator_.rank()) +
        ": they were not used to compute the loss. Every rank must reduce the same gradients, so "
        "use them, or leave them out of the model given to DistributedDataParallel");
  }
  return result;
}

}  // namespace ddp
