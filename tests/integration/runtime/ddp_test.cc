// DistributedDataParallel with ranks as threads over real links: N ranks with batch B each train
// exactly as one process with batch N x B would (within float tolerance), whatever the buckets.
#include <catch2/catch.hpp>
#include <cmath>

#include "ddp/distributed_data_parallel.h"
#include "integration/runtime/rank_threads.h"

using namespace ddprun;
using namespace ddprun::testing;
using namespace ddp;

namespace {

constexpr size_t kBatch = 8;  // per rank
constexpr int kSteps = 5;

std::unique_ptr<nn::Sequential> SeedModel(uint32_t seed) {
  std::mt19937 generator(seed);
  auto model = std::make_unique<nn::Sequential>();
  model->Add(std::make_unique<nn::Linear>(10, 50, generator, "fc1"))
      .Add(std::make_unique<nn::ReLU>())
      .Add(std::make_unique<nn::Linear>(50, 1, generator, "fc2"));
  return model;
}

// Rows [first, first + rows) of step `step`'s global batch: x ~ U(-1, 1), y = sum(x) / 3.
std::pair<nn::Matrix, nn::Matrix> Batch(int step, size_t first, size_t rows) {
  nn::Matrix x(rows, 10), y(rows, 1);
  for (size_t r = 0; r < rows; ++r) {
    std::mt19937 generator(static_cast<uint32_t>(step * 100003 + (first + r)));
    float sum = 0;
    for (size_t c = 0; c < 10; ++c) sum += (x.at(r, c) = nn::Uniform(generator, -1, 1));
    y.at(r, 0) = sum / 3;
  }
  return {x, y};
}

std::vector<float> Flatten(nn::Module& model) {
  std::vector<float> all;
  for (auto* p : model.parameters()) all.insert(all.end(), p->value(), p->value() + p->size());
  return all;
}

// One process, batch N x B: the reference.
std::vector<float> TrainAlone(int world) {
  auto model = SeedModel(7);
  std::vector<ParameterRef> refs;
  for (auto* p : model->parameters()) refs.push_back({p->value(), p->grad(), p->size()});
  auto sgd = MakeSgd(refs, {0.1, 0.9, 0, 0, false});
  for (int step = 0; step < kSteps; ++step) {
    auto [x, y] = Batch(step, 0, kBatch * static_cast<size_t>(world));
    REQUIRE(sgd->ZeroGrad().ok());
    auto loss = nn::MseLoss(model->Forward(x).value(), y).value();
    REQUIRE(model->Backward(loss.grad, [](nn::Parameter&) {}).ok());
    REQUIRE(sgd->Step().ok());
  }
  return Flatten(*model);
}

}  // namespace

TEST_CASE("DDP on N ranks with batch B equals one process with batch N x B, for any buckets") {
  TestStore store;
  for (int world : {1, 2, 4}) {
    const std::vector<float> reference = TrainAlone(world);
    // One bucket per parameter, PyTorch's defaults, one bucket for everything.
    for (auto [first, cap] : {std::pair<size_t, size_t>{1, 1},
                              {kDefaultFirstBucketBytes, kDefaultBucketBytes},
                              {SIZE_MAX, SIZE_MAX}}) {
      INFO("world " << world << ", first bucket " << first << ", cap " << cap);
      auto results = RunRanks<std::vector<float>>(
          store, world, "auto",
          [&, first = first, cap = cap](int rank, ProcessGroup& group) {
            // Every rank starts from a different seed: DDP must copy rank 0's parameters.
            auto model = SeedModel(rank == 0 ? 7 : 1000 + static_cast<uint32_t>(rank));
            auto ddp = DistributedDataParallel::Create(*model, *group.communicator().value(),
                                                       {first, cap});
            if (!ddp.ok()) return std::vector<float>{};
            auto sgd = MakeSgd(ddp.value()->optimizer_parameters(), {0.1, 0.9, 0, 0, false});
            for (int step = 0; step < kSteps; ++step) {
              auto [x, y] = Batch(step, static_cast<size_t>(rank) * kBatch, kBatch);
              if (!sgd->ZeroGrad().ok()) return std::vector<float>{};
              auto loss = nn::MseLoss(ddp.value()->Forward(x).value(), y).value();
              if (!ddp.value()->Backward(loss.grad).ok()) return std::vector<float>{};
              if (!sgd->Step().ok()) return std::vector<float>{};
            }
            return Flatten(*model);
          },
          [](const ddprun::Status&) { return std::vector<float>{}; });
      for (const auto& parameters : results) {
        REQUIRE(parameters.size() == reference.size());
        CHECK(parameters == results[0]);  // every replica holds the same bits
        for (size_t i = 0; i < reference.size(); ++i) {
          if (std::fabs(parameters[i] - reference[i]) > 1e-5f) {
            FAIL("parameter element " << i << ": " << parameters[i] << " vs " << reference[i]);
          }
        }
      }
    }
  }
}

TEST_CASE("no_sync accumulates locally, the next synced pass reduces the accumulated sum") {
  TestStore store;
  auto results = RunRanks<std::vector<float>>(
      store, 2, "auto",
      [](int rank, ProcessGroup& group) {
        auto model = SeedModel(7);
        auto ddp = DistributedDataParallel::Create(*model, *group.communicator().value());
        auto [x1, y1] = Batch(0, static_cast<size_t>(rank) * 4, 4);
        auto [x2, y2] = Batch(1, static_cast<size_t>(rank) * 4, 4);
        {
          auto guard = ddp.value()->no_sync();
          (void)ddp.value()->Backward(nn::MseLoss(ddp.value()->Forward(x1).value(), y1)->grad);
        }
        (void)ddp.value()->Backward(nn::MseLoss(ddp.value()->Forward(x2).value(), y2)->grad);
        std::vector<float> grads;
        for (auto* p : model->parameters())
          grads.insert(grads.end(), p->grad(), p->grad() + p->size());
        return grads;
      },
      [](const ddprun::Status&) { return std::vector<float>{}; });
  // Reference: each rank's two micro-batch gradients summed, averaged over the two ranks.
  std::vector<float> want;
  {
    std::vector<std::unique_ptr<nn::Sequential>> replicas;
    std::vector<float> sum;
    for (int rank = 0; rank < 2; ++rank) {
      auto model = SeedModel(7);
      for (int step = 0; step < 2; ++step) {
        auto [x, y] = Batch(step, static_cast<size_t>(rank) * 4, 4);
        REQUIRE(
            model->Backward(nn::MseLoss(model->Forward(x).value(), y)->grad, [](nn::Parameter&) {})
                .ok());
      }
      std::vector<float> grads;
      for (auto* p : model->parameters())
        grads.insert(grads.end(), p->grad(), p->grad() + p->size());
      if (sum.empty()) sum.assign(grads.size(), 0.0f);
      for (size_t i = 0; i < grads.size(); ++i) sum[i] += grads[i] / 2;
    }
    want = sum;
  }
  for (const auto& grads : results) {
    REQUIRE(grads.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) CHECK(grads[i] == Approx(want[i]).margin(1e-6));
  }
}

namespace {

// A module with two parameters whose backward gives a gradient to the first only (or to both
// when `use_both`).
class HalfUsed final : public nn::Module {
 public:
  explicit HalfUsed(bool use_both = false)
      : use_both_(use_both), used_("used", 4), unused_("unused", 4) {}
  ddprun::Result<nn::Matrix> Forward(const nn::Matrix& input) override { return input; }
  ddprun::Result<nn::Matrix> Backward(const nn::Matrix& grad,
                                      const nn::GradientReady& ready) override {
    if (use_both_) ready(unused_);
    ready(used_);
    return grad;
  }
  std::vector<nn::Parameter*> parameters() override { return {&used_, &unused_}; }

 private:
  bool use_both_;
  nn::Parameter used_;
  nn::Parameter unused_;
};

}  // namespace

TEST_CASE("a parameter that gets no gradient is a clear error, not a hang") {
  TestStore store;
  auto results = RunRanks<std::string>(
      store, 2, "auto",
      [](int, ProcessGroup& group) {
        HalfUsed model;
        auto ddp = DistributedDataParallel::Create(model, *group.communicator().value(), {1, 1});
        return ddp.value()->Backward(nn::Matrix(1, 1)).message();
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  for (const auto& message : results) {
    CHECK(message.find("parameter indices [1] did not") != std::string::npos);
  }
}

TEST_CASE("when one rank misses a gradient, the ranks' all-reduces stay in step afterwards") {
  TestStore store;
  auto results = RunRanks<std::string>(
      store, 2, "auto",
      [](int rank, ProcessGroup& group) -> std::string {
        HalfUsed model(/*use_both=*/rank == 0);
        Communicator& comm = *group.communicator().value();
        auto ddp = DistributedDataParallel::Create(model, comm, {1, 1});
        const auto status = ddp.value()->Backward(nn::Matrix(1, 1));
        // Whatever happened to that pass, the next collective pairs with the same one elsewhere.
        float value = static_cast<float>(rank + 1);
        if (auto s = comm.AllReduce(CpuTensor(&value, 1), ReduceOp::kSum); !s.ok()) {
          return s.ToString();
        }
        return (status.ok() ? "ok " : "error ") + std::to_string(static_cast<int>(value));
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  CHECK(results[0] == "ok 3");
  CHECK(results[1] == "error 3");
}

TEST_CASE("ranks whose models differ are told which parameter differs") {
  TestStore store;
  auto results = RunRanks<std::string>(
      store, 2, "auto",
      [](int rank, ProcessGroup& group) {
        std::mt19937 generator(1);
        nn::Sequential model;
        model.Add(std::make_unique<nn::Linear>(10, rank == 0 ? 50 : 60, generator, "fc1"));
        return DistributedDataParallel::Create(model, *group.communicator().value())
            .status()
            .message();
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  for (const auto& message : results) {
    CHECK(message ==
          "DistributedDataParallel: parameter 0 (fc1.weight) has 500 elements on rank 0 but 600 on "
          "rank 1; every rank must build the same model");
  }
}
