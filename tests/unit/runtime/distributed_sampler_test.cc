// ddp::DistributedSampler against PyTorch's DistributedSampler: the reference's worked examples,
// and indices produced by torch 1.13 (torch.randperm and the sampler itself) for fixed seeds.
#include "ddp/distributed_sampler.h"

#include <catch2/catch.hpp>

using namespace ddp;

namespace {

std::vector<size_t> Indices(size_t n, int replicas, int rank, bool shuffle, bool drop_last,
                            uint64_t seed = 0, int64_t epoch = 0) {
  auto sampler = DistributedSampler::Create({n, replicas, rank, shuffle, seed, drop_last});
  REQUIRE(sampler.ok());
  sampler->set_epoch(epoch);
  auto indices = sampler->Indices();
  CHECK(indices.size() == sampler->size());
  return indices;
}

using V = std::vector<size_t>;

}  // namespace

TEST_CASE("without shuffle, 10 samples on 4 ranks are padded with the first ones") {
  CHECK(Indices(10, 4, 0, false, false) == V{0, 4, 8});
  CHECK(Indices(10, 4, 1, false, false) == V{1, 5, 9});
  CHECK(Indices(10, 4, 2, false, false) == V{2, 6, 0});
  CHECK(Indices(10, 4, 3, false, false) == V{3, 7, 1});
}

TEST_CASE("with drop_last, 10 samples on 4 ranks drop the tail") {
  CHECK(Indices(10, 4, 0, false, true) == V{0, 4});
  CHECK(Indices(10, 4, 3, false, true) == V{3, 7});
  CHECK(Indices(3, 8, 0, false, true).empty());  // fewer samples than ranks: none
}

TEST_CASE("3 samples on 8 ranks repeat the list to pad") {
  for (int rank = 0; rank < 8; ++rank) {
    CHECK(Indices(3, 8, rank, false, false) == V{static_cast<size_t>(rank % 3)});
  }
}

TEST_CASE("the shuffle is torch.randperm with manual_seed(seed + epoch), bit for bit") {
  CHECK(RandomPermutation(10, 0) == V{4, 1, 7, 5, 3, 9, 0, 8, 6, 2});
  CHECK(RandomPermutation(17, 5) == V{13, 15, 9, 6, 3, 1, 4, 10, 14, 0, 7, 11, 2, 12, 8, 5, 16});
  auto hundred = RandomPermutation(100, 42);
  CHECK(V(hundred.begin(), hundred.begin() + 10) == V{42, 96, 62, 98, 46, 95, 60, 24, 78, 16});
}

TEST_CASE("shuffled and padded, seed 7, epoch 3: torch's DistributedSampler's indices") {
  // torch.utils.data.DistributedSampler(range(23), num_replicas=4, rank=r, seed=7); set_epoch(3)
  CHECK(Indices(23, 4, 0, true, false, 7, 3) == V{10, 15, 9, 17, 8, 4});
  CHECK(Indices(23, 4, 1, true, false, 7, 3) == V{2, 16, 18, 13, 6, 14});
  CHECK(Indices(23, 4, 2, true, false, 7, 3) == V{20, 7, 22, 3, 12, 1});
  CHECK(Indices(23, 4, 3, true, false, 7, 3) == V{0, 19, 5, 11, 21, 10});
}

TEST_CASE("a rank outside the world is refused as PyTorch refuses it") {
  auto sampler = DistributedSampler::Create({10, 4, 4, true, 0, false});
  CHECK(sampler.status().message() == "invalid rank 4, rank should be in the interval [0, 3]");
}
