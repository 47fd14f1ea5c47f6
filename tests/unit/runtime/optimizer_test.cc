// Optimizers against torch.optim (1.13): three steps on a 3-element parameter with known
// gradients; the expected values were produced by torch with the same settings.
#include "ddp/optimizer.h"

#include <catch2/catch.hpp>
#include <functional>

using namespace ddp;

namespace {

using Trajectory = std::vector<std::vector<float>>;

// Three steps with gradients (0.1 (s+1), -0.3, 0.2 s) at step s; the parameter after each.
Trajectory Run(const std::function<std::unique_ptr<Optimizer>(std::vector<ParameterRef>)>& make) {
  std::vector<float> p = {1.0f, -2.0f, 0.5f};
  std::vector<float> g(3);
  auto optimizer = make({{p.data(), g.data(), 3}});
  Trajectory trajectory;
  for (int s = 0; s < 3; ++s) {
    REQUIRE(optimizer->ZeroGrad().ok());
    g = {0.1f * static_cast<float>(s + 1), -0.3f, 0.2f * static_cast<float>(s)};
    REQUIRE(optimizer->Step().ok());
    trajectory.push_back(p);
  }
  return trajectory;
}

void CheckClose(const Trajectory& got, const Trajectory& want) {
  REQUIRE(got.size() == want.size());
  for (size_t s = 0; s < got.size(); ++s) {
    for (size_t i = 0; i < got[s].size(); ++i) {
      INFO("step " << s << " element " << i);
      CHECK(got[s][i] == Approx(want[s][i]).margin(2e-6));
    }
  }
}

}  // namespace

TEST_CASE("SGD with momentum, weight decay and Nesterov matches torch.optim.SGD") {
  CheckClose(Run([](auto ps) {
               return MakeSgd(ps, {0.1, 0.9, 0, 0.01, true});
             }),
             {{0.9791f, -1.9392f, 0.49905f},
              {0.9303297f, -1.8525956f, 0.4596968f},
              {0.84655f, -1.7428769f, 0.3658547f}});
}

TEST_CASE("SGD with momentum and dampening matches torch.optim.SGD") {
  CheckClose(Run([](auto ps) {
               return MakeSgd(ps, {0.1, 0.9, 0.5, 0, false});
             }),
             {{0.99f, -1.97f, 0.5f}, {0.971f, -1.928f, 0.49f}, {0.9389f, -1.8751999f, 0.461f}});
}

TEST_CASE("Adam with weight decay matches torch.optim.Adam") {
  AdamOptions options;
  options.lr = 0.01;
  options.weight_decay = 0.1;
  CheckClose(Run([&](auto ps) { return MakeAdam(ps, options); }),
             {{0.99f, -1.99f, 0.49f},
              {0.9800897f, -1.9800005f, 0.4813856f},
              {0.9702142f, -1.9700019f, 0.4725453f}});
}

TEST_CASE("AdamW's decoupled weight decay matches torch.optim.AdamW") {
  AdamOptions options;
  options.lr = 0.01;
  options.weight_decay = 0.1;
  CheckClose(Run([&](auto ps) { return MakeAdamW(ps, options); }),
             {{0.989f, -1.988f, 0.4995f},
              {0.9783592f, -1.9760121f, 0.4915591f},
              {0.9678009f, -1.9640361f, 0.4827819f}});
}

TEST_CASE("an optimizer's state saved and loaded continues the same trajectory") {
  std::vector<float> p = {1.0f, 2.0f}, g = {0.5f, -0.5f};
  auto first = MakeAdam({{p.data(), g.data(), 2}}, {});
  REQUIRE(first->Step().ok());
  auto state = first->SaveState();
  REQUIRE(state.ok());
  std::vector<float> q = p;
  auto second = MakeAdam({{q.data(), g.data(), 2}}, {});
  REQUIRE(second->LoadState(state.value()).ok());
  REQUIRE(first->Step().ok());
  REQUIRE(second->Step().ok());
  CHECK(p == q);
  CHECK(second->steps() == 2);
  CHECK_FALSE(second->LoadState({{1.0f}}).ok());
}
