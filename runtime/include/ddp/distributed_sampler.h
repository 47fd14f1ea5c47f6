// ddp::DistributedSampler: which samples of a dataset each rank reads in an epoch, with PyTorch's
// torch.utils.data.DistributedSampler semantics and the same indices, bit for bit: the shuffled
// order is torch.randperm(size, generator seeded with seed + epoch) (std::mt19937 and a forward
// Fisher-Yates with gen() % (n - i), as ATen's randperm_cpu); without drop_last the list is padded
// with its own beginning to a multiple of the number of replicas; rank r takes every
// num_replicas-th index starting at r.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddprun/base/status.h"

namespace ddp {

struct DistributedSamplerOptions {
  size_t dataset_size = 0;
  int num_replicas = 1;  // the world size
  int rank = 0;
  bool shuffle = true;
  uint64_t seed = 0;       // the same on every rank
  bool drop_last = false;  // drop the tail instead of padding to a multiple of num_replicas
};

class DistributedSampler {
 public:
  // INVALID_ARGUMENT when rank is not in [0, num_replicas) (PyTorch's ValueError).
  static ddprun::Result<DistributedSampler> Create(const DistributedSamplerOptions& options);

  // Call before each epoch, as in PyTorch: the shuffle depends on seed + epoch.
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  // Samples per rank per epoch (PyTorch's len(sampler)).
  size_t size() const { return num_samples_; }
  // This rank's indices for the current epoch.
  std::vector<size_t> Indices() const;

 private:
  explicit DistributedSampler(const DistributedSamplerOptions& options);

  DistributedSamplerOptions options_;
  size_t num_samples_ = 0;
  size_t total_size_ = 0;
  int64_t epoch_ = 0;
};

// torch.randperm(n) from a generator seeded with `seed` (torch.Generator().manual_seed(seed)).
std::vector<size_t> RandomPermutation(size_t n, uint64_t seed);

}  // namespace ddp
