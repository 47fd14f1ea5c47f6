// The NCCL backend, and DDP on a GPU over it. The unique-id exchange runs anywhere
// (ncclGetUniqueId needs no GPU); the rest needs a GPU and is skipped, with the reason, where there
// is none. Tagged [gpu].
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

#include "comm/nccl/unique_id_exchange.h"
#include "ddp/distributed_data_parallel.h"
#include "integration/runtime/rank_threads.h"
#include "support/skip.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

// Runs `body` as the one rank of a world of 1 with a GPU; "ok" or what went wrong.
std::string OnOneGpuRank(const std::function<std::string(ddp::ProcessGroup&)>& body) {
  TestStore store;
  auto outcomes = RunRanks<std::string>(
      store, 1, "auto", [&](int, ddp::ProcessGroup& group) { return body(group); },
      [](const ddprun::Status& error) { return error.ToString(); });
  return outcomes[0];
}

}  // namespace

TEST_CASE("rank 0's NCCL unique id reaches every rank through the store, byte for byte") {
  ddp::InMemoryStore store;
  std::vector<std::string> ids(4);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    ranks.emplace_back([&, rank] {
      auto id = ddp::nccl::ExchangeUniqueId(store, rank, std::chrono::seconds(30));
      ids[static_cast<size_t>(rank)] =
          id.ok() ? std::string(reinterpret_cast<const char*>(&id.value()), sizeof(ncclUniqueId))
                  : id.status().ToString();
    });
  }
  for (auto& rank : ranks) rank.join();
  CHECK(ids[0].size() == sizeof(ncclUniqueId));
  for (const auto& id : ids) CHECK(id == ids[0]);
}

TEST_CASE("on a GPU, NCCL all_reduce and broadcast of one rank are right", "[gpu]") {
  if (!HaveGpu()) return ddprun::testing::SkipTest("no GPU visible");
  const std::string outcome = OnOneGpuRank([](ddp::ProcessGroup& group) -> std::string {
    auto comm = group.communicator(ddp::Device::kCuda);
    if (!comm.ok()) return comm.status().ToString();
    std::vector<float> host(1 << 20, 2.0f);
    void* device = nullptr;
    if (cudaMalloc(&device, host.size() * sizeof(float)) != cudaSuccess) return "cudaMalloc";
    cudaMemcpy(device, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
    ddp::TensorView t{device, host.size(), ddp::DataType::kFloat32, ddp::Device::kCuda, 0};
    auto status = comm.value()->AllReduce(t, ddp::ReduceOp::kSum);
    if (status.ok()) status = comm.value()->Broadcast(t, 0);
    cudaMemcpy(host.data(), device, host.size() * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(device);
    if (!status.ok()) return status.ToString();
    return host.front() == 2.0f && host.back() == 2.0f ? "ok" : "wrong values";
  });
  CHECK(outcome == "ok");
}

TEST_CASE("on a GPU, DDP over NCCL takes the same training steps as DDP on the CPU", "[gpu]") {
  if (!HaveGpu()) return ddprun::testing::SkipTest("no GPU visible");
  const std::string outcome = OnOneGpuRank([](ddp::ProcessGroup& group) -> std::string {
    auto make_model = [] {
      std::mt19937 generator(4);
      auto model = std::make_unique<ddp::nn::Sequential>();
      model->Add(std::make_unique<ddp::nn::Linear>(10, 50, generator, "fc1"))
          .Add(std::make_unique<ddp::nn::ReLU>())
          .Add(std::make_unique<ddp::nn::Linear>(50, 1, generator, "fc2"));
      return model;
    };
    auto cpu_model = make_model();
    auto gpu_model = make_model();
    if (auto s = gpu_model->To(ddp::Device::kCuda); !s.ok()) return s.ToString();
    auto cpu_comm = group.communicator(ddp::Device::kCpu);
    auto gpu_comm = group.communicator(ddp::Device::kCuda);
    if (!cpu_comm.ok() || !gpu_comm.ok()) return "no communicator";
    ddp::ReducerOptions buckets;
    buckets.first_bucket_bytes = 1024;  // several buckets, launched during backward
    buckets.bucket_bytes = 1024;
    auto cpu = ddp::DistributedDataParallel::Create(*cpu_model, *cpu_comm.value(), buckets);
    auto gpu = ddp::DistributedDataParallel::Create(*gpu_model, *gpu_comm.value(), buckets);
    if (!cpu.ok()) return cpu.status().ToString();
    if (!gpu.ok()) return gpu.status().ToString();
    auto cpu_sgd = ddp::MakeSgd(cpu.value()->optimizer_parameters(), {0.05, 0.9});
    auto gpu_sgd = ddp::MakeSgd(gpu.value()->optimizer_parameters(), {0.05, 0.9});
    std::mt19937 data(8);
    for (int step = 0; step < 4; ++step) {
      ddp::nn::Matrix x(16, 10), y(16, 1);
      for (float& v : x.data) v = ddp::nn::Uniform(data, -1, 1);
      for (float& v : y.data) v = ddp::nn::Uniform(data, -1, 1);
      if (auto s = cpu_sgd->ZeroGrad(); !s.ok()) return s.ToString();
      if (auto s = gpu_sgd->ZeroGrad(); !s.ok()) return s.ToString();
      auto cpu_loss = ddp::nn::MseLoss(cpu.value()->Forward(x).value(), y).value();
      auto gpu_loss =
          ddp::nn::MseLoss(gpu.value()->Forward(x.To(ddp::Device::kCuda).value()).value(),
                           y.To(ddp::Device::kCuda).value())
              .value();
      if (auto s = cpu.value()->Backward(cpu_loss.grad); !s.ok()) return s.ToString();
      if (auto s = gpu.value()->Backward(gpu_loss.grad); !s.ok()) return s.ToString();
      if (auto s = cpu_sgd->Step(); !s.ok()) return s.ToString();
      if (auto s = gpu_sgd->Step(); !s.ok()) return s.ToString();
    }
    auto cpu_parameters = cpu_model->parameters();
    auto gpu_parameters = gpu_model->parameters();
    for (size_t i = 0; i < cpu_parameters.size(); ++i) {
      const auto expected = cpu_parameters[i]->ValueOnHost();
      const auto actual = gpu_parameters[i]->ValueOnHost();
      for (size_t k = 0; k < expected.size(); ++k) {
        if (std::fabs(actual[k] - expected[k]) > 1e-4f + 1e-4f * std::fabs(expected[k])) {
          return cpu_parameters[i]->name() + "[" + std::to_string(k) + "] is " +
                 std::to_string(actual[k]) + " on the GPU, " + std::to_string(expected[k]) +
                 " on the CPU";
        }
      }
    }
    return "ok";
  });
  CHECK(outcome == "ok");
}
