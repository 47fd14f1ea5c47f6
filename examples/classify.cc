// examples/classify: a larger MLP classifier trained data-parallel under ddprun, on CPU.
//
//   ddprun --standalone --nproc_per_node=2 build/bin/classify [--epochs N] [--samples N]
//       [--hidden H] [--batch-size B] [--lr LR] [--checkpoint-dir DIR]
//
// 64 features -> H -> H -> 10 classes (ReLU), cross-entropy, SGD with momentum 0.9, on a
// synthetic set of 10 Gaussian clusters (a pure function of the sample index, so every rank and
// every restart sees the same data). Rank 0 prints the held-out accuracy before and after.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ddp/trainer.h"
#include "ddprun/base/status_macros.h"

namespace {

constexpr size_t kFeatures = 64;
constexpr size_t kClasses = 10;

// Class centres: fixed, well apart; a sample is its class's centre plus Gaussian noise.
float Centre(size_t cls, size_t feature) {
  return std::sin(static_cast<float>(cls * 7 + feature * 3)) * 1.5f;
}

void Sample(size_t index, float* x, int64_t* label) {
  std::mt19937 generator(static_cast<uint32_t>(index * 2246822519u + 7));
  std::normal_distribution<float> noise(0.0f, 1.0f);
  const size_t cls = index % kClasses;
  for (size_t f = 0; f < kFeatures; ++f) x[f] = Centre(cls, f) + noise(generator);
  *label = static_cast<int64_t>(cls);
}

// The share of `count` samples from index `first` that the model classifies right.
ddprun::Result<double> Accuracy(ddp::nn::Module& model, size_t first, size_t count) {
  ddp::nn::Matrix x(count, kFeatures);
  std::vector<int64_t> labels(count);
  for (size_t r = 0; r < count; ++r) Sample(first + r, &x.data[r * kFeatures], &labels[r]);
  ASSIGN_OR_RETURN(const ddp::nn::Matrix logits, model.Forward(x));
  size_t right = 0;
  for (size_t r = 0; r < count; ++r) {
    size_t best = 0;
    for (size_t c = 1; c < kClasses; ++c) best = logits.at(r, c) > logits.at(r, best) ? c : best;
    right += static_cast<int64_t>(best) == labels[r] ? 1 : 0;
  }
  return static_cast<double>(right) / static_cast<double>(count);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ddp::TrainerOptions options;
  options.epochs = 3;
  options.batch_size = 64;
  options.log_every = 50;
  size_t samples = 16384, hidden = 512;
  double lr = 0.05;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "classify: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--epochs")
      options.epochs = std::atoi(value.c_str());
    else if (flag == "--samples")
      samples = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--hidden")
      hidden = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--batch-size")
      options.batch_size = std::strtoull(value.c_str(), nullptr, 10);
    else if (flag == "--lr")
      lr = std::atof(value.c_str());
    else if (flag == "--checkpoint-dir")
      options.checkpoint_dir = value;
    else {
      std::fprintf(stderr, "classify: unknown argument '%s' (see examples/classify.cc)\n",
                   flag.c_str());
      return 2;
    }
  }
  if (options.epochs < 1 || options.batch_size < 1 || samples < 1 || hidden < 1 || !(lr > 0)) {
    std::fprintf(stderr, "classify: every value must be positive\n");
    return 2;
  }
  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::fprintf(stderr, "classify: %s\n", group.status().message().c_str());
    return 2;
  }
  std::mt19937 init(0);
  ddp::nn::Sequential model;
  model.Add(std::make_unique<ddp::nn::Linear>(kFeatures, hidden, init, "fc1"))
      .Add(std::make_unique<ddp::nn::ReLU>())
      .Add(std::make_unique<ddp::nn::Linear>(hidden, hidden, init, "fc2"))
      .Add(std::make_unique<ddp::nn::ReLU>())
      .Add(std::make_unique<ddp::nn::Linear>(hidden, kClasses, init, "out"));
  const auto before = Accuracy(model, samples, 2000);
  // Labels travel as floats in the trainer's target matrix (exact for class indices).
  ddp::Dataset data{samples,
                    [](const std::vector<size_t>& indices, ddp::nn::Matrix& x, ddp::nn::Matrix& y) {
                      x = ddp::nn::Matrix(indices.size(), kFeatures);
                      y = ddp::nn::Matrix(indices.size(), 1);
                      for (size_t r = 0; r < indices.size(); ++r) {
                        int64_t label = 0;
                        Sample(indices[r], &x.data[r * kFeatures], &label);
                        y.data[r] = static_cast<float>(label);
                      }
                    }};
  auto loss = [](const ddp::nn::Matrix& logits, const ddp::nn::Matrix& y) {
    std::vector<int64_t> labels(y.rows);
    for (size_t r = 0; r < y.rows; ++r) labels[r] = static_cast<int64_t>(y.data[r]);
    return ddp::nn::CrossEntropyLoss(logits, labels);
  };
  auto result = ddp::Train(
      *group.value(), model, data, loss,
      [&](std::vector<ddp::ParameterRef> parameters) {
        return ddp::MakeSgd(parameters, {lr, 0.9, 0, 0, false});
      },
      options);
  const auto after = Accuracy(model, samples, 2000);
  for (const ddprun::Status& status : {result.status(), before.status(), after.status()}) {
    if (!status.ok()) {
      std::fprintf(stderr, "classify: %s\n", status.message().c_str());
      return 1;
    }
  }
  if (group.value()->rank() == 0) {
    std::printf("held-out accuracy %.3f -> %.3f after %lld steps\n", before.value(), after.value(),
                static_cast<long long>(result->steps));
  }
  return 0;
}
