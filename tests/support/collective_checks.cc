// The collectives' checks; see collective_checks.h.
#include "support/collective_checks.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>

#include "comm/cpu/reduce_kernels.h"

namespace ddprun::testing {
namespace {

using ddp::DataType;
using ddp::ReduceOp;

constexpr DataType kTypes[] = {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                               DataType::kInt64,   DataType::kFloat16, DataType::kBFloat16};
constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAvg, ReduceOp::kMin, ReduceOp::kMax};

int64_t Value(int rank, size_t i, int salt) {
  return static_cast<int64_t>((static_cast<size_t>(rank) * 31 + i * 7 + static_cast<size_t>(salt)) %
                              13) -
         6;
}

// Writes `value` as element i of a buffer of `type`.
void Store(DataType type, std::vector<std::byte>& buffer, size_t i, double value) {
  std::byte* at = buffer.data() + i * ddp::SizeOf(type);
  switch (type) {
    case DataType::kFloat32: {
      const float v = static_cast<float>(value);
      std::memcpy(at, &v, sizeof(v));
      return;
    }
    case DataType::kFloat64:
      std::memcpy(at, &value, sizeof(value));
      return;
    case DataType::kInt32: {
      const int32_t v = static_cast<int32_t>(value);
      std::memcpy(at, &v, sizeof(v));
      return;
    }
    case DataType::kInt64: {
      const int64_t v = static_cast<int64_t>(value);
      std::memcpy(at, &v, sizeof(v));
      return;
    }
    case DataType::kFloat16: {
      const uint16_t v = ddp::cpu::FloatToHalf(static_cast<float>(value));
      std::memcpy(at, &v, sizeof(v));
      return;
    }
    case DataType::kBFloat16: {
      const uint16_t v = ddp::cpu::FloatToBFloat16(static_cast<float>(value));
      std::memcpy(at, &v, sizeof(v));
      return;
    }
  }
}

std::vector<std::byte> Input(DataType type, size_t count, int rank, int salt) {
  std::vector<std::byte> buffer(count * ddp::SizeOf(type));
  for (size_t i = 0; i < count; ++i)
    Store(type, buffer, i, static_cast<double>(Value(rank, i, salt)));
  return buffer;
}

// What every rank must hold after reducing every rank's Input(...) with `op`.
std::vector<std::byte> Reduced(DataType type, ReduceOp op, size_t count, int world, int salt,
                               size_t first = 0) {
  std::vector<std::byte> buffer(count * ddp::SizeOf(type));
  for (size_t i = 0; i < count; ++i) {
    int64_t sum = 0, low = Value(0, first + i, salt), high = low;
    for (int r = 0; r < world; ++r) {
      const int64_t v = Value(r, first + i, salt);
      sum += v;
      low = std::min(low, v);
      high = std::max(high, v);
    }
    const int64_t exact = op == ReduceOp::kMin ? low : op == ReduceOp::kMax ? high : sum;
    Store(type, buffer, i, static_cast<double>(exact));
  }
  // An average is the exact sum divided once, in the type, as the backend does it.
  if (op == ReduceOp::kAvg) ddp::cpu::DivideInPlace(type, buffer.data(), count, world);
  return buffer;
}

uint64_t Fingerprint(const std::vector<std::byte>& bytes) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (std::byte b : bytes) hash = (hash ^ static_cast<uint8_t>(b)) * 1099511628211ull;
  return hash ^ bytes.size();
}

// Where the checks' tensors live: each in its own vector, or copied into a registered buffer and
// back out after the collective.
class TensorPlaces {
 public:
  explicit TensorPlaces(std::shared_ptr<ddp::RegisteredBuffer> registered)
      : registered_(std::move(registered)) {}

  // The memory for `bytes` during a collective: the vector's own, or the registered buffer at an
  // offset that depends on `salt` (a multiple of 8 bytes, not always of a cache line).
  std::byte* Put(std::vector<std::byte>& bytes, int salt) {
    if (!registered_) return bytes.data();
    std::byte* at =
        static_cast<std::byte*>(registered_->data()) + static_cast<size_t>(salt % 4) * 72;
    if (!bytes.empty()) std::memcpy(at, bytes.data(), bytes.size());
    return at;
  }
  // Copies back what a collective wrote at `at` (from Put).
  void Take(std::vector<std::byte>& bytes, const std::byte* at) {
    if (registered_ && !bytes.empty()) std::memcpy(bytes.data(), at, bytes.size());
  }

  static constexpr size_t kMostOffset = 3 * 72;

 private:
  std::shared_ptr<ddp::RegisteredBuffer> registered_;
};

// Bytes of the largest tensor the plan puts in a registered buffer.
size_t LargestTensorBytes(const CheckPlan& plan, int world) {
  size_t largest = plan.large * sizeof(float);
  for (size_t count : plan.sizes)
    largest = std::max(largest, count * static_cast<size_t>(world) * 8);
  return largest;
}

}  // namespace

CheckResults RunCollectiveChecks(ddp::Communicator& comm, const CheckPlan& plan) {
  CheckResults results;
  const int rank = comm.rank();
  const int world = comm.world_size();
  // `shared`: every rank must hold these bits (not so for reduce_scatter's own block).
  auto record = [&](const std::string& what, const std::vector<std::byte>& got,
                    const std::vector<std::byte>& want, const ddprun::Status& status,
                    bool shared = true) {
    ++results.checks;
    if (shared) results.fingerprints.push_back(Fingerprint(got));
    if (!status.ok()) {
      results.failures.push_back(what + ": " + status.ToString());
    } else if (got != want) {
      results.failures.push_back(what + ": differs from the reference on rank " +
                                 std::to_string(rank));
    }
  };
  std::shared_ptr<ddp::RegisteredBuffer> registered;
  if (plan.registered) {
    auto allocated =
        comm.AllocateShared(LargestTensorBytes(plan, world) + TensorPlaces::kMostOffset);
    if (!allocated.ok()) {
      results.failures.push_back("AllocateShared: " + allocated.status().ToString());
      return results;
    }
    registered = std::move(allocated).value();
    results.direct = registered->direct();
  }
  TensorPlaces places(registered);
  int salt = 0;
  for (DataType type : kTypes) {
    if (!plan.all_types && type != DataType::kFloat32) continue;
    for (size_t count : plan.sizes) {
      const std::string shape = std::string(ddp::NameOf(type)) + " x " + std::to_string(count);
      for (ReduceOp op : kOps) {
        ++salt;
        auto data = Input(type, count, rank, salt);
        std::byte* at = places.Put(data, salt);
        auto status = comm.AllReduce({at, count, type}, op);
        places.Take(data, at);
        record(std::string("all_reduce ") + ddp::NameOf(op) + " " + shape, data,
               Reduced(type, op, count, world, salt), status);

        // reduce_scatter: block r of the reduced input.
        ++salt;
        auto input = Input(type, count * static_cast<size_t>(world), rank, salt);
        std::vector<std::byte> block(count * ddp::SizeOf(type));
        status =
            comm.ReduceScatter({places.Put(input, salt), input.size() / ddp::SizeOf(type), type},
                               {block.data(), count, type}, op);
        record(std::string("reduce_scatter ") + ddp::NameOf(op) + " " + shape, block,
               Reduced(type, op, count, world, salt, static_cast<size_t>(rank) * count), status,
               /*shared=*/false);
      }
      // broadcast from the last rank; all_gather of every rank's input.
      ++salt;
      const int root = world - 1;
      auto data = Input(type, count, rank, salt);
      std::byte* at = places.Put(data, salt);
      auto status = comm.Broadcast({at, count, type}, root);
      places.Take(data, at);
      record("broadcast " + shape, data, Input(type, count, root, salt), status);

      ++salt;
      auto mine = Input(type, count, rank, salt);
      std::vector<std::byte> gathered(mine.size() * static_cast<size_t>(world));
      status = comm.AllGather({places.Put(mine, salt), count, type},
                              {gathered.data(), count * static_cast<size_t>(world), type});
      std::vector<std::byte> want;
      for (int r = 0; r < world; ++r) {
        auto theirs = Input(type, count, r, salt);
        want.insert(want.end(), theirs.begin(), theirs.end());
      }
      record("all_gather " + shape, gathered, want, status);
    }
  }
  if (plan.large > 0) {
    ++salt;
    auto data = Input(DataType::kFloat32, plan.large, rank, salt);
    std::byte* at = places.Put(data, salt);
    auto status = comm.AllReduce({at, plan.large, DataType::kFloat32}, ReduceOp::kSum);
    places.Take(data, at);
    record("all_reduce sum float32 x " + std::to_string(plan.large), data,
           Reduced(DataType::kFloat32, ReduceOp::kSum, plan.large, world, salt), status);
  }
  ++results.checks;
  if (auto status = comm.Barrier(); !status.ok()) {
    results.failures.push_back("barrier: " + status.ToString());
  }
  return results;
}

}  // namespace ddprun::testing
