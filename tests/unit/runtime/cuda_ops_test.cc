// Layers, losses and optimizers on a CUDA GPU compute what they compute on the CPU (cuBLAS and the
// kernels against OpenBLAS and the loops, within float tolerance). Tagged [gpu]: skipped, with the
// reason, where no GPU is visible. Without one, CUDA is refused with a clear error: thrown by a
// constructor, returned by everything else.
#include <catch2/catch.hpp>
#include <random>

#include "ddp/nn.h"
#include "ddp/optimizer.h"
#include "support/skip.h"

using namespace ddp;
using namespace ddp::nn;

namespace {

bool HaveGpu() { return CudaDeviceCount() > 0; }

std::unique_ptr<Sequential> SmallModel(uint32_t seed, size_t outputs) {
  std::mt19937 generator(seed);
  auto model = std::make_unique<Sequential>();
  model->Add(std::make_unique<Linear>(7, 33, generator, "fc1"))
      .Add(std::make_unique<ReLU>())
      .Add(std::make_unique<Linear>(33, outputs, generator, "fc2"));
  return model;
}

Matrix RandomMatrix(size_t rows, size_t cols, uint32_t seed) {
  std::mt19937 generator(seed);
  Matrix m(rows, cols);
  for (float& v : m.data) v = Uniform(generator, -1, 1);
  return m;
}

void CheckClose(const std::vector<float>& gpu, const std::vector<float>& cpu, const char* what) {
  REQUIRE(gpu.size() == cpu.size());
  for (size_t i = 0; i < cpu.size(); ++i) {
    INFO(what << "[" << i << "]");
    CHECK(gpu[i] == Approx(cpu[i]).margin(1e-5).epsilon(1e-4));
  }
}

std::vector<float> GradientOnHost(Parameter& p) {
  std::vector<float> values(p.size());
  device_memory::Copy(values.data(), Device::kCpu, p.grad(), p.device(), p.size() * sizeof(float));
  return values;
}

}  // namespace

TEST_CASE(
    "without a GPU, CUDA is refused with an error naming CUDA, as a value but from a constructor") {
  if (HaveGpu()) return ddprun::testing::SkipTest("a GPU is visible");
  REQUIRE_THROWS_WITH(Matrix(4, 4, 0.0f, Device::kCuda), Catch::Contains("CUDA"));
  // A module reports it as an error value.
  auto model = SmallModel(5, 2);
  const ddprun::Status moved = model->To(Device::kCuda);
  CHECK(moved.code() == ddprun::StatusCode::kFailedPrecondition);
  CHECK_THAT(moved.message(), Catch::Contains("CUDA"));
  // So do a matrix's move and an optimizer over CUDA parameters (its state is made there).
  const auto matrix = Matrix(4, 4).To(Device::kCuda);
  CHECK(matrix.status().code() == ddprun::StatusCode::kFailedPrecondition);
  CHECK_THAT(matrix.status().message(), Catch::Contains("moving a matrix to CUDA"));
  auto sgd = MakeSgd({{nullptr, nullptr, 16, Device::kCuda}}, {0.1, 0.9});
  const ddprun::Status stepped = sgd->Step();
  CHECK(stepped.code() == ddprun::StatusCode::kFailedPrecondition);
  CHECK_THAT(stepped.message(), Catch::Contains("the optimizer's step"));
  CHECK(sgd->ZeroGrad().code() == ddprun::StatusCode::kFailedPrecondition);
}

TEST_CASE("on a GPU, Linear, ReLU and both losses give the CPU's values and gradients", "[gpu]") {
  if (!HaveGpu()) return ddprun::testing::SkipTest("no GPU visible");
  const Matrix x = RandomMatrix(9, 7, 1);
  const Matrix target = RandomMatrix(9, 2, 2);
  const std::vector<int64_t> classes = {0, 1, 1, 0, 1, 0, 0, 1, 1};
  for (int loss_kind = 0; loss_kind < 2; ++loss_kind) {
    auto cpu = SmallModel(5, 2);
    auto gpu = SmallModel(5, 2);
    REQUIRE(gpu->To(Device::kCuda).ok());
    const Matrix cpu_out = cpu->Forward(x).value();
    const Matrix gpu_out = gpu->Forward(x.To(Device::kCuda).value()).value();
    CheckClose(gpu_out.data.ToHost(), cpu_out.data.ToHost(), "forward");
    const Loss cpu_loss =
        (loss_kind == 0 ? MseLoss(cpu_out, target) : CrossEntropyLoss(cpu_out, classes)).value();
    const Loss gpu_loss = (loss_kind == 0 ? MseLoss(gpu_out, target.To(Device::kCuda).value())
                                          : CrossEntropyLoss(gpu_out, classes))
                              .value();
    CHECK(gpu_loss.value == Approx(cpu_loss.value).epsilon(1e-5));
    CheckClose(gpu_loss.grad.data.ToHost(), cpu_loss.grad.data.ToHost(), "loss gradient");
    std::vector<std::string> order_cpu, order_gpu;
    const Matrix cpu_dx =
        cpu->Backward(cpu_loss.grad, [&](Parameter& p) { order_cpu.push_back(p.name()); }).value();
    const Matrix gpu_dx =
        gpu->Backward(gpu_loss.grad, [&](Parameter& p) { order_gpu.push_back(p.name()); }).value();
    CHECK(order_gpu == order_cpu);
    CheckClose(gpu_dx.data.ToHost(), cpu_dx.data.ToHost(), "input gradient");
    auto cpu_parameters = cpu->parameters();
    auto gpu_parameters = gpu->parameters();
    for (size_t i = 0; i < cpu_parameters.size(); ++i) {
      CheckClose(GradientOnHost(*gpu_parameters[i]), GradientOnHost(*cpu_parameters[i]),
                 cpu_parameters[i]->name().c_str());
    }
  }
}

TEST_CASE("on a GPU, SGD, Adam and AdamW take the CPU's steps", "[gpu]") {
  if (!HaveGpu()) return ddprun::testing::SkipTest("no GPU visible");
  using Factory = std::function<std::unique_ptr<Optimizer>(std::vector<ParameterRef>)>;
  const std::vector<std::pair<std::string, Factory>> optimizers = {
      {"sgd",
       [](auto p) {
         return MakeSgd(std::move(p), {0.1, 0.9, 0.1, 0.01, false});
       }},
      {"nesterov",
       [](auto p) {
         return MakeSgd(std::move(p), {0.1, 0.9, 0.0, 0.0, true});
       }},
      {"adam",
       [](auto p) {
         return MakeAdam(std::move(p), {1e-2, 0.9, 0.999, 1e-8, 0.01});
       }},
      {"adamw",
       [](auto p) {
         return MakeAdamW(std::move(p), {1e-2, 0.9, 0.999, 1e-8, 0.01});
       }},
  };
  for (const auto& [name, make] : optimizers) {
    INFO(name);
    std::mt19937 generator(9);
    FloatArray cpu_value(257), cpu_grad(257);
    for (float& v : cpu_value) v = Uniform(generator, -1, 1);
    FloatArray gpu_value = cpu_value.To(Device::kCuda);
    FloatArray gpu_grad(257, 0.0f, Device::kCuda);
    auto cpu = make({{cpu_value.data(), cpu_grad.data(), 257, Device::kCpu}});
    auto gpu = make({{gpu_value.data(), gpu_grad.data(), 257, Device::kCuda}});
    for (int step = 0; step < 5; ++step) {
      for (float& g : cpu_grad) g = Uniform(generator, -1, 1);
      gpu_grad.CopyFromHost(cpu_grad.data());
      REQUIRE(cpu->Step().ok());
      REQUIRE(gpu->Step().ok());
    }
    CheckClose(gpu_value.ToHost(), cpu_value.ToHost(), "value");
    const auto cpu_state = cpu->SaveState().value();
    const auto gpu_state = gpu->SaveState().value();
    REQUIRE(gpu_state.size() == cpu_state.size());
    for (size_t i = 0; i < cpu_state.size(); ++i) CheckClose(gpu_state[i], cpu_state[i], "state");
    REQUIRE(gpu->ZeroGrad().ok());
    CheckClose(gpu_grad.ToHost(), std::vector<float>(257, 0.0f), "zeroed gradient");
  }
}
