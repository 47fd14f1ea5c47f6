// The runtime against real PyTorch: DistributedSampler's indices, the optimizers' steps and the
// seeds' MLP trained for a few steps, each compared with what tests/pytorch/reference_values.py
// gets from torch in the same run.
#include <catch2/catch.hpp>
#include <map>
#include <sstream>

#include "ddp/distributed_sampler.h"
#include "ddp/nn.h"
#include "ddp/optimizer.h"
#include "pytorch_support.h"

using namespace ddprun::testing;

namespace {

// "key : v0 v1 ..." lines of the reference script, by key.
using References = std::map<std::string, std::vector<std::string>>;

const References& TorchReferences() {
  static const References references = [] {
    References parsed;
    auto result = Run({PythonWithTorch(), Script("reference_values.py")}, {}, 120s);
    INFO(result.err);
    REQUIRE(result.code() == 0);
    for (const auto& line : Lines(result.out)) {
      const size_t colon = line.find(" : ");
      const std::string key = line.substr(0, colon);
      std::vector<std::string> values;
      if (colon != std::string::npos) {
        std::stringstream fields(line.substr(colon + 3));
        for (std::string field; fields >> field;) values.push_back(field);
      }
      parsed[key] = values;
    }
    return parsed;
  }();
  return references;
}

std::vector<float> Floats(const std::string& key) {
  const auto& references = TorchReferences();
  auto it = references.find(key);
  INFO(key);
  REQUIRE(it != references.end());
  std::vector<float> values;
  for (const auto& text : it->second) values.push_back(std::stof(text));
  return values;
}

void CheckClose(const std::vector<float>& actual, const std::vector<float>& expected,
                const std::string& what) {
  REQUIRE(actual.size() == expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO(what << "[" << i << "]");
    CHECK(actual[i] == Approx(expected[i]).epsilon(1e-5).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("DistributedSampler gives torch's indices for a grid of lengths, worlds, seeds, epochs") {
  if (!HavePytorch()) return;
  size_t compared = 0;
  for (const auto& [key, values] : TorchReferences()) {
    if (key.rfind("sampler ", 0) != 0) continue;
    std::stringstream fields(key.substr(8));
    size_t n = 0;
    int world = 0, rank = 0, shuffle = 0, drop_last = 0;
    uint64_t seed = 0;
    int64_t epoch = 0;
    fields >> n >> world >> rank >> seed >> epoch >> shuffle >> drop_last;
    auto sampler =
        ddp::DistributedSampler::Create({n, world, rank, shuffle != 0, seed, drop_last != 0});
    INFO(key);
    REQUIRE(sampler.ok());
    sampler->set_epoch(epoch);
    std::vector<std::string> ours;
    for (size_t index : sampler->Indices()) ours.push_back(std::to_string(index));
    CHECK(ours == values);
    ++compared;
  }
  CHECK(compared == 960);
}

TEST_CASE("SGD, Adam and AdamW take torch.optim's steps") {
  if (!HavePytorch()) return;
  const std::map<std::string,
                 std::function<std::unique_ptr<ddp::Optimizer>(std::vector<ddp::ParameterRef>)>>
      optimizers = {
          {"sgd",
           [](auto p) {
             return ddp::MakeSgd(p, {0.1, 0, 0, 0, false});
           }},
          {"sgd_momentum",
           [](auto p) {
             return ddp::MakeSgd(p, {0.1, 0.9, 0.1, 0.01, false});
           }},
          {"sgd_nesterov",
           [](auto p) {
             return ddp::MakeSgd(p, {0.05, 0.8, 0, 0, true});
           }},
          {"adam",
           [](auto p) {
             return ddp::MakeAdam(p, {0.01, 0.9, 0.999, 1e-8, 0.02});
           }},
          {"adamw",
           [](auto p) {
             return ddp::MakeAdamW(p, {0.01, 0.9, 0.999, 1e-8, 0.05});
           }},
      };
  for (const auto& [name, make] : optimizers) {
    const std::string prefix = "optimizer " + name;
    std::vector<float> value = Floats(prefix + " init");
    std::vector<float> grad(value.size());
    auto optimizer = make({{value.data(), grad.data(), value.size()}});
    for (int step = 0; step < 5; ++step) {
      const auto given = Floats(prefix + " grad " + std::to_string(step));
      REQUIRE(given.size() == grad.size());
      std::copy(given.begin(), given.end(), grad.begin());  // in place: the optimizer holds it
      REQUIRE(optimizer->Step().ok());
    }
    CheckClose(value, Floats(prefix + " final"), name);
  }
}

TEST_CASE("the seeds' MLP trained by the runtime stays with PyTorch's from the same start") {
  if (!HavePytorch()) return;
  std::mt19937 unused(0);
  ddp::nn::Sequential model;
  model.Add(std::make_unique<ddp::nn::Linear>(10, 50, unused, "fc1"))
      .Add(std::make_unique<ddp::nn::ReLU>())
      .Add(std::make_unique<ddp::nn::Linear>(50, 1, unused, "fc2"));
  std::vector<ddp::ParameterRef> refs;
  for (auto* p : model.parameters()) {
    const auto initial = Floats("mlp param " + p->name());
    REQUIRE(initial.size() == p->size());
    p->SetValueFromHost(initial.data());
    refs.push_back({p->value(), p->grad(), p->size()});
  }
  ddp::AdamOptions adam;
  adam.lr = 1e-3;
  auto optimizer = ddp::MakeAdam(refs, adam);
  for (int step = 0; step < 5; ++step) {
    const std::string s = std::to_string(step);
    ddp::nn::Matrix x(16, 10), y(16, 1);
    x.data = ddp::FloatArray(Floats("mlp x " + s));
    y.data = ddp::FloatArray(Floats("mlp y " + s));
    REQUIRE(optimizer->ZeroGrad().ok());
    auto loss = ddp::nn::MseLoss(model.Forward(x).value(), y).value();
    REQUIRE(model.Backward(loss.grad, [](ddp::nn::Parameter&) {}).ok());
    REQUIRE(optimizer->Step().ok());
    INFO("step " << step);
    CHECK(loss.value == Approx(Floats("mlp loss " + s).at(0)).epsilon(1e-5));
  }
  for (auto* p : model.parameters()) {
    CheckClose(p->ValueOnHost(), Floats("mlp final " + p->name()), p->name());
  }
}
