// A data-parallel trainer written only against ddprun's installed headers and library: a linear
// model y = 3x - 1 learned by SGD on every rank of the job, gradients averaged by
// DistributedDataParallel. Rank 0 prints "trained world=W loss=L" at the end; the program exits
// 1 when the loss did not fall.
#include <cstdio>
#include <memory>
#include <random>

#include "ddp/distributed_data_parallel.h"
#include "ddp/distributed_sampler.h"
#include "ddp/nn.h"
#include "ddp/optimizer.h"
#include "ddp/process_group.h"
#include "ddprun/base/status_macros.h"

int main() {
  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::fprintf(stderr, "trainer: %s\n", group.status().message().c_str());
    return 2;
  }
  auto comm = group.value()->communicator();
  if (!comm.ok()) {
    std::fprintf(stderr, "trainer: %s\n", comm.status().message().c_str());
    return 1;
  }
  std::mt19937 init(1);
  ddp::nn::Sequential model;
  model.Add(std::make_unique<ddp::nn::Linear>(1, 1, init, "line"));
  auto ddp = ddp::DistributedDataParallel::Create(model, *comm.value());
  if (!ddp.ok()) {
    std::fprintf(stderr, "trainer: %s\n", ddp.status().message().c_str());
    return 1;
  }
  auto sgd = ddp::MakeSgd(ddp.value()->optimizer_parameters(), {0.1});
  // One step of SGD on (x, y): the loss, or the first error of any part.
  auto train_step = [&](const ddp::nn::Matrix& x,
                        const ddp::nn::Matrix& y) -> ddprun::Result<float> {
    RETURN_IF_ERROR(sgd->ZeroGrad());
    ASSIGN_OR_RETURN(const ddp::nn::Matrix prediction, ddp.value()->Forward(x));
    ASSIGN_OR_RETURN(const ddp::nn::Loss loss, ddp::nn::MseLoss(prediction, y));
    RETURN_IF_ERROR(ddp.value()->Backward(loss.grad));
    RETURN_IF_ERROR(sgd->Step());
    return loss.value;
  };
  auto sampler = ddp::DistributedSampler::Create(
      {256, group.value()->world_size(), group.value()->rank(), true, 0, false});
  if (!sampler.ok()) return 1;
  float first = -1, last = 0;
  for (int epoch = 0; epoch < 20; ++epoch) {
    sampler->set_epoch(epoch);
    const auto indices = sampler->Indices();
    ddp::nn::Matrix x(indices.size(), 1), y(indices.size(), 1);
    for (size_t i = 0; i < indices.size(); ++i) {
      x.data[i] = static_cast<float>(indices[i]) / 128.0f - 1.0f;
      y.data[i] = 3.0f * x.data[i] - 1.0f;
    }
    auto loss = train_step(x, y);
    if (!loss.ok()) {
      std::fprintf(stderr, "trainer: %s\n", loss.status().message().c_str());
      return 1;
    }
    if (first < 0) first = loss.value();
    last = loss.value();
  }
  if (group.value()->rank() == 0) {
    std::printf("trained world=%d loss=%.6f (from %.6f)\n", group.value()->world_size(), last,
                first);
  }
  return last < first / 10 ? 0 : 1;
}
