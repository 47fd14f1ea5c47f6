// The layers and losses: analytic gradients against finite differences, and the values PyTorch
// gives for the losses on small hand-made inputs.
#include "ddp/nn.h"

#include <catch2/catch.hpp>
#include <cmath>

using namespace ddp::nn;

namespace {

// A two-layer MLP with a loss; returns the loss, and leaves the gradients in the parameters.
float LossAndGradients(Sequential& model, const Matrix& x,
                       const std::function<ddprun::Result<Loss>(const Matrix&)>& loss) {
  for (auto* p : model.parameters()) std::fill(p->grad(), p->grad() + p->size(), 0.0f);
  Loss l = loss(model.Forward(x).value()).value();
  REQUIRE(model.Backward(l.grad, [](Parameter&) {}).ok());
  return l.value;
}

void CheckAgainstFiniteDifferences(const std::function<ddprun::Result<Loss>(const Matrix&)>& loss,
                                   size_t outputs) {
  std::mt19937 generator(3);
  Sequential model;
  model.Add(std::make_unique<Linear>(4, 6, generator, "fc1"))
      .Add(std::make_unique<ReLU>())
      .Add(std::make_unique<Linear>(6, outputs, generator, "fc2"));
  Matrix x(5, 4);
  for (float& v : x.data) v = Uniform(generator, -1, 1);
  LossAndGradients(model, x, loss);
  for (auto* p : model.parameters()) {
    std::vector<float> analytic(p->grad(), p->grad() + p->size());
    for (size_t i = 0; i < p->size(); i += 3) {
      const float saved = p->value()[i];
      const float h = 1e-3f;
      p->value()[i] = saved + h;
      const float up = LossAndGradients(model, x, loss);
      p->value()[i] = saved - h;
      const float down = LossAndGradients(model, x, loss);
      p->value()[i] = saved;
      INFO(p->name() << "[" << i << "]");
      CHECK(analytic[i] == Approx((up - down) / (2 * h)).margin(2e-3));
    }
  }
}

}  // namespace

TEST_CASE("Linear, ReLU and MSE backward match finite differences") {
  Matrix target(5, 2);
  for (size_t i = 0; i < target.data.size(); ++i) target.data[i] = 0.1f * static_cast<float>(i);
  CheckAgainstFiniteDifferences([&](const Matrix& y) { return MseLoss(y, target); }, 2);
}

TEST_CASE("cross-entropy backward matches finite differences") {
  const std::vector<int64_t> classes = {0, 2, 1, 2, 0};
  CheckAgainstFiniteDifferences([&](const Matrix& y) { return CrossEntropyLoss(y, classes); }, 3);
}

TEST_CASE("the losses' values are PyTorch's on hand-made inputs") {
  Matrix logits(2, 3);
  logits.data = {1.0f, 2.0f, 3.0f, 0.5f, 0.5f, -1.0f};
  // torch.nn.functional.cross_entropy(tensor([[1.,2.,3.],[.5,.5,-1.]]), tensor([2, 0]))
  CHECK(CrossEntropyLoss(logits, {2, 0})->value == Approx(0.6032611).margin(1e-5));
  Matrix a(1, 2), b(1, 2);
  a.data = {1.0f, 3.0f};
  b.data = {2.0f, 1.0f};
  CHECK(MseLoss(a, b)->value == Approx(2.5f));  // ((1-2)^2 + (3-1)^2) / 2
}

TEST_CASE("Linear's initialization is torch.nn.Linear's: within +-1/sqrt(in)") {
  std::mt19937 generator(0);
  Linear layer(16, 8, generator);
  for (size_t i = 0; i < layer.weight().size(); ++i) {
    CHECK(std::fabs(layer.weight().value()[i]) <= 0.25f);
  }
}

TEST_CASE("a wrong shape is an error naming both shapes, never an out-of-bounds read") {
  std::mt19937 generator(5);
  Linear fc(4, 3, generator, "fc1");
  // Forward: 4 columns wanted, 7 given.
  auto forward = fc.Forward(Matrix(2, 7));
  REQUIRE_FALSE(forward.ok());
  CHECK(forward.status().code() == ddprun::StatusCode::kInvalidArgument);
  CHECK(forward.status().message() == "fc1 takes Nx4 inputs, not 2x7");
  // Backward: after a forward of 2 rows, the output gradient must be 2x3.
  REQUIRE(fc.Forward(Matrix(2, 4)).ok());
  auto backward = fc.Backward(Matrix(5, 3), [](Parameter&) { FAIL("no gradient is ready"); });
  REQUIRE_FALSE(backward.ok());
  CHECK_THAT(backward.status().message(),
             Catch::Contains("must be 2x3") && Catch::Contains("not 5x3"));
  // Backward before any forward has nothing to pair the gradient with.
  Linear fresh(4, 3, generator, "fc2");
  CHECK_FALSE(fresh.Backward(Matrix(2, 3), [](Parameter&) {}).ok());
  ReLU relu;
  REQUIRE(relu.Forward(Matrix(2, 4)).ok());
  CHECK_THAT(relu.Backward(Matrix(4, 2), [](Parameter&) {}).status().message(),
             Catch::Contains("2x4") && Catch::Contains("4x2"));
  // The losses.
  CHECK(MseLoss(Matrix(2, 3), Matrix(3, 2)).status().message() ==
        "MseLoss: the prediction is 2x3 but the target is 3x2");
  CHECK_THAT(CrossEntropyLoss(Matrix(2, 3), {0}).status().message(),
             Catch::Contains("1 targets for 2x3 logits"));
  CHECK_THAT(CrossEntropyLoss(Matrix(2, 3), {0, 3}).status().message(),
             Catch::Contains("target class 3 is outside [0, 3)"));
  // In a Sequential the first failing layer's error stops the pass.
  Sequential model;
  model.Add(std::make_unique<Linear>(4, 6, generator, "a"))
      .Add(std::make_unique<Linear>(5, 1, generator, "b"));
  CHECK(model.Forward(Matrix(1, 4)).status().message() == "b takes Nx5 inputs, not 1x6");
}
