// How DistributedDataParallel groups gradients into buckets, as PyTorch's Reducer does
// (compute_bucket_assignment_by_size): parameters are taken in reverse order (the order their
// gradients usually become ready in backward), grouped by data type and device, and a bucket is
// closed once it holds at least its limit: 1 MiB for the first bucket of each group, then the cap
// (25 MiB by default). The parameter that crosses the limit stays in the bucket, so a bucket may
// exceed it. Buckets are listed in launch order: bucket 0 holds the last parameters.
#pragma once

#include <cstddef>
#include <vector>

#include "ddp/tensor.h"

namespace ddp {

inline constexpr size_t kDefaultFirstBucketBytes = 1 << 20;
inline constexpr size_t kDefaultBucketBytes = 25 << 20;

struct ParameterSpec {
  size_t count = 0;  // elements
  DataType type = DataType::kFloat32;
  Device device = Device::kCpu;
  int device_index = 0;
};

// Buckets of parameter indices (into `parameters`, in definition order), in launch order. Within
// a bucket, parameters are in the order they were taken (reverse definition order).
std::vector<std::vector<size_t>> AssignBuckets(const std::vector<ParameterSpec>& parameters,
                                               size_t first_bucket_bytes = kDefaultFirstBucketBytes,
                                               size_t bucket_bytes = kDefaultBucketBytes);

}  // namespace ddp
