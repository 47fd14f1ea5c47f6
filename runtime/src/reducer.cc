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
    bucket_sizes_.push_back(offset);
    pending_.push_back(buckets_[b].size());
  }
  if (device_ == Device::kCpu && options.registered_buckets) PlaceBucketsInRegisteredBuffer();
  if (!registered_storage_) {
    for (size_t size : bucket_sizes_) {
      device_storage_.emplace_back(size, 0.0f, device_);
      bucket_data_.push_back(device_storage_.back().data());
    }
  }
}

void Reducer::PlaceBucketsInRegisteredBuffer() {
  // Buckets start on cache lines (16 floats).
  auto aligned = [](size_t floats) { return (floats + 15) / 16 * 16; };
  size_t total = 0;
  for (size_t size : bucket_sizes_) total += aligned(size);
  auto buffer = communicator_.AllocateShared(total * sizeof(float));
  if (!buffer.ok()) return;  // a broken communicator: the first all-reduce will say so
  registered_storage_ = std::move(buffer).value();
  auto* at = static_cast<float*>(registered_storage_->data());
  for (size_t size : bucket_sizes_) {
    bucket_data_.push_back(at);
    at += aligned(size);
  }
}

float* Reducer::GradientStorage(size_t index) {
  const Location& at = locations_[index];
  return bucket_data_[at.bucket] + at.offset;
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
  const TensorView bucket{bucket_data_[next_bucket_], bucket_sizes_[next_bucket_],
                          DataType::kFloat32, device_, device_index_};
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
