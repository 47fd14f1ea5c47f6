// ddp::DistributedSampler; see distributed_sampler.h.
#include "ddp/distributed_sampler.h"

#include <numeric>
#include <random>

namespace ddp {

std::vector<size_t> RandomPermutation(size_t n, uint64_t seed) {
  std::vector<size_t> result(n);
  std::iota(result.begin(), result.end(), size_t{0});
  // torch's CPU generator is an mt19937 seeded with the seed's low 32 bits; randperm swaps each
  // position with a later one drawn as random() % (n - i).
  std::mt19937 generator(static_cast<uint32_t>(seed));
  for (size_t i = 0; i + 1 < n; ++i) {
    const size_t z = generator() % (n - i);
    std::swap(result[i], result[i + z]);
  }
  return result;
}

ddprun::Result<DistributedSampler> DistributedSampler::Create(
    const DistributedSamplerOptions& options) {
  if (options.num_replicas < 1 || options.rank < 0 || options.rank >= options.num_replicas) {
    return ddprun::InvalidArgumentError("invalid rank " + std::to_string(options.rank) +
                                        ", rank should be in the interval [0, " +
                                        std::to_string(options.num_replicas - 1) + "]");
  }
  return DistributedSampler(options);
}

DistributedSampler::DistributedSampler(const DistributedSamplerOptions& options)
    : options_(options) {
  const size_t n = options.dataset_size;
  const auto replicas = static_cast<size_t>(options.num_replicas);
  if (options.drop_last && n % replicas != 0) {
    // ceil((n - R) / R), which is 0 when n < R.
    num_samples_ = n < replicas ? 0 : (n - replicas + replicas - 1) / replicas;
  } else {
    num_samples_ = (n + replicas - 1) / replicas;
  }
  total_size_ = num_samples_ * replicas;
}

std::vector<size_t> DistributedSampler::Indices() const {
  const size_t n = options_.dataset_size;
  std::vector<size_t> indices;
  if (options_.shuffle) {
    indices = RandomPermutation(n, options_.seed + static_cast<uint64_t>(epoch_));
  } else {
    indices.resize(n);
    std::iota(indices.begin(), indices.end(), size_t{0});
  }
  if (!options_.drop_last) {
    // Padded with the list's own beginning, repeated as often as needed.
    for (size_t i = 0; indices.size() < total_size_ && n > 0; ++i) indices.push_back(indices[i]);
  } else {
    indices.resize(total_size_);
  }
  std::vector<size_t> mine;
  mine.reserve(num_samples_);
  for (size_t i = static_cast<size_t>(options_.rank); i < total_size_;
       i += static_cast<size_t>(options_.num_replicas)) {
    mine.push_back(indices[i]);
  }
  return mine;
}

}  // namespace ddp
