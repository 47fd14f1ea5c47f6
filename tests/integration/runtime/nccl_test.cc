// The NCCL backend. The unique-id exchange runs anywhere (ncclGetUniqueId needs no GPU); the
// collectives need a GPU and are skipped, with a warning, where there is none. Tagged [gpu].
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <thread>

#include "comm/nccl/unique_id_exchange.h"
#include "integration/runtime/rank_threads.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

bool HaveGpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

}  // namespace

TEST_CASE("rank 0's NCCL unique id reaches every rank through the store, byte for byte") {
  RendezvousServerOptions options;
  auto server = RendezvousServer::Start(options).value();
  std::vector<std::string> ids(4);
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < 4; ++rank) {
    ranks.emplace_back([&, rank] {
      StoreClientOptions store_options;
      store_options.address = server->address();
      store_options.job_id = "nccl-id";
      auto store = StoreClient::Connect(store_options);
      auto id = ddp::nccl::ExchangeUniqueId(*store, rank, std::chrono::seconds(30));
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
  if (!HaveGpu()) {
    WARN("skipped: no GPU visible");
    return;
  }
  TestStore store;
  auto outcomes = RunRanks<std::string>(
      store, 1, "auto",
      [](int, ddp::ProcessGroup& group) -> std::string {
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
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  CHECK(outcomes[0] == "ok");
}
