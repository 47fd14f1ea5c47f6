// examples/train: the seeds' model trained data-parallel under ddprun, on the CPU (or on one GPU
// per rank with --device cuda: cuBLAS, the runtime's kernels, NCCL).
//
//   ddprun --standalone --nproc_per_node=2 build/bin/train [--epochs N] [--samples N]
//       [--batch-size B] [--lr LR] [--checkpoint-dir DIR] [--checkpoint-every STEPS]
//       [--kill-at-step STEP] [--device cpu|cuda]
//
// Linear(10, 50) -> ReLU -> Linear(50, 1), MSE loss, Adam (lr 1e-3), on a synthetic regression
// set: y = sum_i w_i x_i + 0.5 sin(3 x_0) with fixed weights, x uniform in [-1, 1). Each rank reads
// its shard of every epoch (DistributedSampler); gradients are averaged in buckets while backward
// runs (DistributedDataParallel); rank 0 logs and writes checkpoints, and a restarted job resumes
// from the newest one. At the end rank 0 prints the loss on a held-out set before and after
// training, and a fingerprint of the parameters (equal for equal runs, bit for bit).
//
// --kill-at-step: fault injection for tests: in the first attempt (TORCHELASTIC_RESTART_COUNT=0)
// rank 1 kills itself with SIGKILL after that step.
#include <signal.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ddp/trainer.h"
#include "ddprun/base/status_macros.h"

namespace {

constexpr size_t kFeatures = 10;

// Sample `index` of the synthetic set: a pure function of the index, so every rank and every
// restart sees the same data.
void Sample(size_t index, float* x, float* y) {
  std::mt19937 generator(static_cast<uint32_t>(index * 2654435761u + 12345));
  static const float weights[kFeatures] = {0.8f, -1.2f, 0.5f, 0.3f,  -0.7f,
                                           1.1f, -0.4f, 0.9f, -0.2f, 0.6f};
  float target = 0;
  for (size_t i = 0; i < kFeatures; ++i) {
    x[i] = ddp::nn::Uniform(generator, -1, 1);
    target += weights[i] * x[i];
  }
  *y = target + 0.5f * std::sin(3 * x[0]);
}

// The model's loss on `count` samples from index `first`.
ddprun::Result<float> Evaluate(ddp::nn::Module& model, size_t first, size_t count) {
  ddp::nn::Matrix x(count, kFeatures), y(count, 1);
  for (size_t r = 0; r < count; ++r) Sample(first + r, &x.data[r * kFeatures], &y.data[r]);
  const ddp::Device device = model.parameters().front()->device();
  ASSIGN_OR_RETURN(const ddp::nn::Matrix x_there, x.To(device));
  ASSIGN_OR_RETURN(const ddp::nn::Matrix y_there, y.To(device));
  ASSIGN_OR_RETURN(const ddp::nn::Matrix prediction, model.Forward(x_there));
  ASSIGN_OR_RETURN(const ddp::nn::Loss loss, ddp::nn::MseLoss(prediction, y_there));
  return loss.value;
}

uint64_t Fingerprint(ddp::nn::Module& model) {
  uint64_t hash = 1469598103934665603ull;
  for (auto* p : model.parameters()) {
    const std::vector<float> values = p->ValueOnHost();
    const auto* bytes = reinterpret_cast<const unsigned char*>(values.data());
    for (size_t i = 0; i < values.size() * sizeof(float); ++i)
      hash = (hash ^ bytes[i]) * 1099511628211ull;
  }
  return hash;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ddp::TrainerOptions options;
  options.epochs = 5;
  options.batch_size = 32;
  options.log_every = 100;
  size_t samples = 8192;
  double lr = 1e-3;
  int64_t kill_at = -1;
  ddp::Device device = ddp::Device::kCpu;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    const char* value = i + 1 < argc ? argv[i + 1] : nullptr;
    auto number = [&]() -> double {
      if (value == nullptr) {
        std::fprintf(stderr, "train: %s needs a value\n", flag.c_str());
        std::exit(2);
      }
      ++i;
      return std::atof(value);
    };
    if (flag == "--epochs")
      options.epochs = static_cast<int>(number());
    else if (flag == "--samples")
      samples = static_cast<size_t>(number());
    else if (flag == "--batch-size")
      options.batch_size = static_cast<size_t>(number());
    else if (flag == "--lr")
      lr = number();
    else if (flag == "--checkpoint-every")
      options.checkpoint_every = static_cast<int64_t>(number());
    else if (flag == "--kill-at-step")
      kill_at = static_cast<int64_t>(number());
    else if (flag == "--checkpoint-dir" && value != nullptr)
      options.checkpoint_dir = argv[++i];
    else if (flag == "--device" && value != nullptr &&
             (std::strcmp(value, "cpu") == 0 || std::strcmp(value, "cuda") == 0))
      device = std::strcmp(argv[++i], "cuda") == 0 ? ddp::Device::kCuda : ddp::Device::kCpu;
    else {
      std::fprintf(stderr, "train: unknown argument '%s' (see the comment in examples/train.cc)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (options.epochs < 1 || options.batch_size < 1 || samples < 1 || !(lr > 0)) {
    std::fprintf(stderr, "train: --epochs, --samples, --batch-size and --lr must be positive\n");
    return 2;
  }

  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::fprintf(stderr, "train: %s\n", group.status().message().c_str());
    return 2;
  }
  std::mt19937 init(0);  // the same on every rank (DDP broadcasts rank 0's anyway)
  ddp::nn::Sequential model;
  model.Add(std::make_unique<ddp::nn::Linear>(kFeatures, 50, init, "fc1"))
      .Add(std::make_unique<ddp::nn::ReLU>())
      .Add(std::make_unique<ddp::nn::Linear>(50, 1, init, "fc2"));
  if (device == ddp::Device::kCuda) {
    // NCCL's communicator picks this rank's GPU (its local rank); the model goes there.
    if (auto comm = group.value()->communicator(device); !comm.ok()) {
      std::fprintf(stderr, "train: %s\n", comm.status().message().c_str());
      return 1;
    }
    if (ddprun::Status moved = model.To(device); !moved.ok()) {
      std::fprintf(stderr, "train: %s\n", moved.message().c_str());
      return 1;
    }
  }

  const int rank = group.value()->rank();
  const auto before = Evaluate(model, samples, 1024);  // held out: indices past the training set
  ddp::Dataset data{samples,
                    [](const std::vector<size_t>& indices, ddp::nn::Matrix& x, ddp::nn::Matrix& y) {
                      x = ddp::nn::Matrix(indices.size(), kFeatures);
                      y = ddp::nn::Matrix(indices.size(), 1);
                      for (size_t r = 0; r < indices.size(); ++r) {
                        Sample(indices[r], &x.data[r * kFeatures], &y.data[r]);
                      }
                    }};
  const char* restarts = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const bool first_attempt = restarts == nullptr || std::strcmp(restarts, "0") == 0;
  if (kill_at >= 0 && rank == 1 && first_attempt) {
    options.after_step = [kill_at](int64_t step) {
      if (step == kill_at) ::raise(SIGKILL);
    };
  }
  ddp::AdamOptions adam;
  adam.lr = lr;
  auto result = ddp::Train(
      *group.value(), model, data, ddp::nn::MseLoss,
      [&](std::vector<ddp::ParameterRef> parameters) { return ddp::MakeAdam(parameters, adam); },
      options);
  const auto after = Evaluate(model, samples, 1024);
  for (const ddprun::Status& status : {result.status(), before.status(), after.status()}) {
    if (!status.ok()) {
      std::fprintf(stderr, "train: rank %d: %s\n", rank, status.message().c_str());
      return 1;
    }
  }
  if (rank == 0) {
    std::printf("held-out loss %.6f -> %.6f after %lld steps%s\n", before.value(), after.value(),
                static_cast<long long>(result->steps),
                result->resumed_from >= 0
                    ? (" (resumed from step " + std::to_string(result->resumed_from) + ")").c_str()
                    : "");
    std::printf("parameters fingerprint %016llx\n",
                static_cast<unsigned long long>(Fingerprint(model)));
  }
  return 0;
}
