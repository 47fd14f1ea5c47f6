// Bucket assignment against PyTorch's rule, on hand-made parameter lists.
#include "ddp/bucket_assignment.h"

#include <catch2/catch.hpp>

using namespace ddp;

namespace {

constexpr size_t kMiB = 1 << 20;

ParameterSpec Floats(size_t bytes, DataType type = DataType::kFloat32) {
  return {bytes / SizeOf(type), type, Device::kCpu, 0};
}

using Buckets = std::vector<std::vector<size_t>>;

}  // namespace

TEST_CASE("the last parameters fill a first bucket of 1 MiB, the rest fill buckets of 25 MiB") {
  // Definition order p0..p4; taken in reverse: p4 closes the 1 MiB bucket alone, p3 (30 MiB)
  // crosses the cap and stays in its bucket, p2..p0 are left in an open bucket at the end.
  const std::vector<ParameterSpec> params = {Floats(kMiB / 2), Floats(kMiB * 6 / 10),
                                             Floats(2 * kMiB), Floats(30 * kMiB), Floats(kMiB)};
  CHECK(AssignBuckets(params) == Buckets{{4}, {3}, {2, 1, 0}});
}

TEST_CASE("small parameters share a bucket until it reaches its limit") {
  const std::vector<ParameterSpec> params(10, Floats(300 << 10));  // 300 KiB each
  // 4 x 300 KiB = 1200 KiB >= 1 MiB closes the first; the cap is never reached after that.
  CHECK(AssignBuckets(params) == Buckets{{9, 8, 7, 6}, {5, 4, 3, 2, 1, 0}});
  // The cap as the first limit too, and a cap small enough for one parameter per bucket.
  CHECK(AssignBuckets(params, 1, 1).size() == 10);
  CHECK(AssignBuckets(params, SIZE_MAX, SIZE_MAX) == Buckets{{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}});
}

TEST_CASE("buckets never mix data types or devices") {
  std::vector<ParameterSpec> params = {Floats(kMiB / 4), Floats(kMiB / 4, DataType::kFloat64),
                                       Floats(kMiB / 4), Floats(kMiB / 4, DataType::kFloat64)};
  params.push_back({1024, DataType::kFloat32, Device::kCuda, 0});
  CHECK(AssignBuckets(params) == Buckets{{4}, {3, 1}, {2, 0}});
}
