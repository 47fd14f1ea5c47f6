// ddp::Train; see trainer.h.
#include "ddp/trainer.h"

#include <chrono>
#include <cstdio>

#include "ddp/progress.h"
#include "ddprun/base/status_macros.h"
#include "device_errors.h"

namespace ddp {
namespace {

// Rank 0 loads the newest valid checkpoint and every rank receives it: model, optimizer state,
// position. Goes through host memory and the CPU communicator `comm`, wherever the model lives.
// Returns the checkpoint's step, or -1 when there is none.
ddprun::Result<int64_t> Resume(Communicator& comm, const std::string& dir, nn::Module& model,
                               Optimizer& optimizer, TrainingState& position) {
  int64_t header[3] = {-1, 0, 0};  // step, epoch, sampler position
  std::optional<LoadedCheckpoint> loaded;
  if (comm.rank() == 0 && !dir.empty()) {
    auto found = CheckpointDirectory(dir, 1).LoadNewest();
    if (!found.ok()) return found.status();
    loaded = std::move(found).value();
    if (loaded) {
      for (const auto& skipped : loaded->skipped) {
        std::fprintf(stderr, "ddp: skipping an invalid checkpoint: %s\n", skipped.c_str());
      }
      header[0] = loaded->state.step;
      header[1] = loaded->state.epoch;
      header[2] = loaded->state.sampler_position;
    }
  }
  RETURN_IF_ERROR(comm.Broadcast(CpuTensor(header, 3), 0));
  if (header[0] < 0) return int64_t{-1};
  auto parameters = model.parameters();
  // The right shapes, filled on rank 0 from the file.
  ASSIGN_OR_RETURN(std::vector<std::vector<float>> state, optimizer.SaveState());
  std::vector<std::vector<float>> values;
  for (auto* p : parameters) values.push_back(p->ValueOnHost());
  if (comm.rank() == 0) {
    if (loaded->state.model.size() != parameters.size()) {
      return ddprun::InvalidArgumentError("checkpoint " + loaded->path +
                                          " is of a different model");
    }
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (loaded->state.model[i].size() != parameters[i]->size()) {
        return ddprun::InvalidArgumentError("checkpoint " + loaded->path +
                                            " is of a different model");
      }
    }
    values = loaded->state.model;
    state = loaded->state.optimizer;
    RETURN_IF_ERROR(optimizer.LoadState(state));
    std::fprintf(stderr, "ddp: resuming from %s (step %lld)\n", loaded->path.c_str(),
                 static_cast<long long>(header[0]));
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    if (auto s = comm.Broadcast(CpuTensor(values[i].data(), values[i].size()), 0); !s.ok()) {
      return s;
    }
    parameters[i]->SetValueFromHost(values[i].data());
  }
  for (auto& buffer : state) {
    RETURN_IF_ERROR(comm.Broadcast(CpuTensor(buffer.data(), buffer.size()), 0));
  }
  if (comm.rank() != 0) {
    RETURN_IF_ERROR(optimizer.LoadState(state));
  }
  position.step = header[0];
  position.epoch = header[1];
  position.sampler_position = header[2];
  return header[0];
}

ddprun::Result<TrainingState> Snapshot(nn::Module& model, const Optimizer& optimizer, int64_t epoch,
                                       int64_t step, int64_t position) {
  return CatchDeviceErrors("copying the model for a checkpoint",
                           [&]() -> ddprun::Result<TrainingState> {
                             TrainingState state;
                             state.epoch = epoch;
                             state.step = step;
                             state.sampler_position = position;
                             for (auto* p : model.parameters()) {
                               state.model.push_back(p->ValueOnHost());
                             }
                             ASSIGN_OR_RETURN(state.optimizer, optimizer.SaveState());
                             return state;
                           });
}

}  // namespace

ddprun::Result<TrainingResult> Train(ProcessGroup& group, nn::Module& model, const Dataset& data,
                                     const LossFunction& loss_function,
                                     const OptimizerFactory& make_optimizer,
                                     const TrainerOptions& options) {
  // Gradients are reduced where the model lives; checkpoints travel through the CPU.
  const auto parameters = model.parameters();
  const Device device = parameters.empty() ? Device::kCpu : parameters[0]->device();
  auto comm = group.communicator(device);
  if (!comm.ok()) return comm.status();
  auto host_comm = group.communicator(Device::kCpu);
  if (!host_comm.ok()) return host_comm.status();
  auto ddp = DistributedDataParallel::Create(model, *comm.value(), options.buckets);
  if (!ddp.ok()) return ddp.status();
  auto optimizer = make_optimizer(ddp.value()->optimizer_parameters());
  TrainingState position;
  auto resumed = CatchDeviceErrors("resuming from a checkpoint", [&] {
    return Resume(*host_comm.value(), options.checkpoint_dir, model, *optimizer, position);
  });
  if (!resumed.ok()) return resumed.status();

  auto sampler = DistributedSampler::Create(
      {data.size, group.world_size(), group.rank(), options.shuffle, options.seed, false});
  if (!sampler.ok()) return sampler.status();
  const size_t per_epoch = (sampler->size() + options.batch_size - 1) / options.batch_size;
  const int64_t total_steps = static_cast<int64_t>(per_epoch) * options.epochs;
  const bool logs = group.rank() == 0;
  std::optional<CheckpointDirectory> checkpoints;
  if (!options.checkpoint_dir.empty() && group.rank() == 0) {
    checkpoints.emplace(options.checkpoint_dir, options.keep_checkpoints);
  }

  TrainingResult result;
  result.resumed_from = resumed.value();
  int64_t step = position.step;
  const auto started = std::chrono::steady_clock::now();
  const int64_t first_step = step;
  for (int64_t epoch = position.epoch; epoch < options.epochs; ++epoch) {
    sampler->set_epoch(epoch);
    const auto indices = sampler->Indices();
    size_t at = epoch == position.epoch ? static_cast<size_t>(position.sampler_position) : 0;
    while (at < indices.size()) {
      const size_t end = std::min(indices.size(), at + options.batch_size);
      std::vector<size_t> batch(indices.begin() + static_cast<std::ptrdiff_t>(at),
                                indices.begin() + static_cast<std::ptrdiff_t>(end));
      nn::Matrix inputs, targets;
      data.load(batch, inputs, targets);
      if (device != Device::kCpu) {
        ASSIGN_OR_RETURN(inputs, inputs.To(device));
        ASSIGN_OR_RETURN(targets, targets.To(device));
      }
      RETURN_IF_ERROR(optimizer->ZeroGrad());
      ASSIGN_OR_RETURN(const nn::Matrix prediction, ddp.value()->Forward(inputs));
      ASSIGN_OR_RETURN(const nn::Loss loss, loss_function(prediction, targets));
      RETURN_IF_ERROR(ddp.value()->Backward(loss.grad));
      RETURN_IF_ERROR(optimizer->Step());
      at = end;
      ++step;
      ReportStep(step);
      result.last_loss = loss.value;
      const bool epoch_done = at >= indices.size();
      if (checkpoints && options.checkpoint_every > 0 && step % options.checkpoint_every == 0) {
        // The position after this step: the next epoch's start when this one is done.
        ASSIGN_OR_RETURN(const TrainingState state,
                         epoch_done
                             ? Snapshot(model, *optimizer, epoch + 1, step, 0)
                             : Snapshot(model, *optimizer, epoch, step, static_cast<int64_t>(at)));
        RETURN_IF_ERROR(checkpoints->Save(state));
      }
      if (logs && options.log_every > 0 && (step % options.log_every == 0 || step == total_steps)) {
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        const double rate = static_cast<double>(step - first_step) *
                            static_cast<double>(options.batch_size) * group.world_size() /
                            std::max(seconds, 1e-9);
        const double eta = static_cast<double>(total_steps - step) *
                           (seconds / static_cast<double>(std::max<int64_t>(1, step - first_step)));
        std::printf("epoch %lld step %lld/%lld loss %.6f samples/s %.0f [%3.0f%%, ETA %.1f s]\n",
                    static_cast<long long>(epoch), static_cast<long long>(step),
                    static_cast<long long>(total_steps), loss.value, rate,
                    100.0 * static_cast<double>(step) / static_cast<double>(total_steps), eta);
        std::fflush(stdout);
      }
      if (options.after_step) options.after_step(step);
    }
  }
  if (checkpoints && step != position.step) {
    ASSIGN_OR_RETURN(const TrainingState state,
                     Snapshot(model, *optimizer, options.epochs, step, 0));
    RETURN_IF_ERROR(checkpoints->Save(state));
  }
  result.steps = step;
  return result;
}

}  // namespace ddp
