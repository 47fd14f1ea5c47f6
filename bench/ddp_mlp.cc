// ddp-mlp-bench: the anchor's PyTorch DDP benchmark (bench/anchors/ddp_mlp.py) written against
// ddprun's runtime: the same MLP (IN 256 -> HIDDEN 1024 x (LAYERS - 1) -> 1, ReLU), the same
// batch per rank (64), MSE, SGD lr 1e-3, 5 warm-up steps then STEPS timed steps between barriers.
// Run under ddprun; rank 0 prints one line like the anchor's. Environment as the anchor's:
// HIDDEN, LAYERS, BATCH, STEPS, IN, BUCKET_MB; OVERLAP=0 to launch every all-reduce only after
// backward; REGISTERED=0 to keep the CPU buckets in ordinary memory (through the ring) instead of a
// registered buffer (read directly by the peers on one host); DEVICE=cuda to train on the GPU
// (cuBLAS, NCCL), one per rank (LOCAL_RANK).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ddp/distributed_data_parallel.h"
#include "ddp/process_group.h"
#include "ddprun/base/status_macros.h"

namespace {

size_t EnvOr(const char* name, size_t fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? static_cast<size_t>(std::atof(value)) : fallback;
}

}  // namespace

int main() {
  const size_t hidden = EnvOr("HIDDEN", 1024), layers = EnvOr("LAYERS", 4);
  const size_t batch = EnvOr("BATCH", 64), steps = EnvOr("STEPS", 50), in = EnvOr("IN", 256);
  const char* bucket_mb = std::getenv("BUCKET_MB");
  const bool overlap = EnvOr("OVERLAP", 1) != 0;
  const bool registered = EnvOr("REGISTERED", 1) != 0;
  const char* device_name = std::getenv("DEVICE");
  const ddp::Device device = device_name != nullptr && std::string(device_name) == "cuda"
                                 ? ddp::Device::kCuda
                                 : ddp::Device::kCpu;
  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::fprintf(stderr, "ddp-mlp-bench: %s\n", group.status().message().c_str());
    return 2;
  }
  std::mt19937 init(0);
  ddp::nn::Sequential model;
  model.Add(std::make_unique<ddp::nn::Linear>(in, hidden, init, "fc0"))
      .Add(std::make_unique<ddp::nn::ReLU>());
  for (size_t l = 0; l + 2 < layers; ++l) {
    model.Add(std::make_unique<ddp::nn::Linear>(hidden, hidden, init, "fc" + std::to_string(l + 1)))
        .Add(std::make_unique<ddp::nn::ReLU>());
  }
  model.Add(std::make_unique<ddp::nn::Linear>(hidden, 1, init, "out"));
  ddp::ReducerOptions buckets;
  if (bucket_mb != nullptr)
    buckets.bucket_bytes = static_cast<size_t>(std::atof(bucket_mb) * (1 << 20));
  buckets.overlap = overlap;
  buckets.registered_buckets = registered;
  // Barriers on the CPU: they also time the GPU's work, once a parameter read below has waited
  // for it.
  ddp::Communicator& comm = *group.value()->communicator().value();
  auto reducing = group.value()->communicator(device);
  if (!reducing.ok()) {
    std::fprintf(stderr, "ddp-mlp-bench: %s\n", reducing.status().message().c_str());
    return 1;
  }
  if (ddprun::Status moved = model.To(device); !moved.ok()) {
    std::fprintf(stderr, "ddp-mlp-bench: %s\n", moved.message().c_str());
    return 1;
  }
  auto ddp = ddp::DistributedDataParallel::Create(model, *reducing.value(), buckets);
  if (!ddp.ok()) {
    std::fprintf(stderr, "ddp-mlp-bench: %s\n", ddp.status().message().c_str());
    return 1;
  }
  auto sgd = ddp::MakeSgd(ddp.value()->optimizer_parameters(), {1e-3, 0, 0, 0, false});
  std::mt19937 data(1);
  ddp::nn::Matrix x(batch, in), y(batch, 1);
  for (float& v : x.data) v = ddp::nn::Uniform(data, -1.7f, 1.7f);
  for (float& v : y.data) v = ddp::nn::Uniform(data, -1.7f, 1.7f);
  auto moved_x = x.To(device);
  auto moved_y = y.To(device);
  if (!moved_x.ok() || !moved_y.ok()) {
    std::fprintf(stderr, "ddp-mlp-bench: %s\n",
                 (moved_x.ok() ? moved_y.status() : moved_x.status()).message().c_str());
    return 1;
  }
  x = std::move(moved_x).value();
  y = std::move(moved_y).value();
  // Waits for every step queued on the GPU (a read on the default stream); nothing on the CPU.
  auto finish_queued_work = [&] { (void)model.parameters().back()->ValueOnHost(); };
  size_t parameters = 0;
  for (auto* p : model.parameters()) parameters += p->size();
  // One step of SGD; the first error of any part.
  auto try_step = [&]() -> ddprun::Status {
    RETURN_IF_ERROR(sgd->ZeroGrad());
    ASSIGN_OR_RETURN(const ddp::nn::Matrix prediction, ddp.value()->Forward(x));
    ASSIGN_OR_RETURN(const ddp::nn::Loss loss, ddp::nn::MseLoss(prediction, y));
    RETURN_IF_ERROR(ddp.value()->Backward(loss.grad));
    return sgd->Step();
  };
  auto step = [&] {
    if (ddprun::Status stepped = try_step(); !stepped.ok()) {
      std::fprintf(stderr, "ddp-mlp-bench: %s\n", stepped.message().c_str());
      std::exit(1);
    }
  };
  for (int i = 0; i < 5; ++i) step();
  finish_queued_work();
  (void)comm.Barrier();
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < steps; ++i) step();
  finish_queued_work();
  (void)comm.Barrier();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (comm.rank() == 0) {
    std::printf(
        "ddp world=%d device=%s params=%zu batch/rank=%zu overlap=%d registered=%d "
        "step_ms=%.2f "
        "samples_per_s=%.1f\n",
        comm.world_size(), device == ddp::Device::kCuda ? "cuda" : "cpu", parameters, batch,
        overlap ? 1 : 0, registered ? 1 : 0, 1000 * seconds / static_cast<double>(steps),
        static_cast<double>(batch * static_cast<size_t>(comm.world_size()) * steps) / seconds);
  }
  return 0;
}
