// ddp::Trainer: the training loop of a data-parallel job. Runs epochs of steps over a dataset
// sharded by DistributedSampler, with DistributedDataParallel and an optimizer; logs on rank 0
// (step, loss, samples/s, progress with ETA); rank 0 writes a checkpoint every N steps and at the
// end; on start every rank resumes from the newest valid checkpoint (read by rank 0 and broadcast,
// so no shared file system is needed) and continues exactly where it was: the same batches, the
// same bits as a run that was never interrupted.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddp/checkpoint.h"
#include "ddp/distributed_data_parallel.h"
#include "ddp/distributed_sampler.h"
#include "ddp/nn.h"
#include "ddp/optimizer.h"
#include "ddp/process_group.h"

namespace ddp {

struct Dataset {
  size_t size = 0;
  // The samples at `indices` as input rows and target rows.
  std::function<void(const std::vector<size_t>& indices, nn::Matrix& inputs, nn::Matrix& targets)>
      load;
};

struct TrainerOptions {
  int epochs = 1;
  size_t batch_size = 32;  // per rank
  uint64_t seed = 0;       // the sampler's shuffle
  bool shuffle = true;
  std::string checkpoint_dir;    // empty: no checkpoints
  int64_t checkpoint_every = 0;  // steps; 0: only at the end
  int keep_checkpoints = 3;
  int64_t log_every = 50;  // steps
  ReducerOptions buckets;
  // Called after every step with the step number (tests and examples inject faults here).
  std::function<void(int64_t step)> after_step;
};

struct TrainingResult {
  int64_t steps = 0;          // optimizer steps of the whole run, resumed ones included
  int64_t resumed_from = -1;  // the checkpoint's step, or -1
  float last_loss = 0;
};

using LossFunction =
    std::function<ddprun::Result<nn::Loss>(const nn::Matrix& prediction, const nn::Matrix& target)>;
using OptimizerFactory =
    std::function<std::unique_ptr<Optimizer>(std::vector<ParameterRef> parameters)>;

// Every rank at once. Errors: a failed collective (a peer died: exit, ddprun restarts the job),
// a checkpoint that cannot be written.
ddprun::Result<TrainingResult> Train(ProcessGroup& group, nn::Module& model, const Dataset& data,
                                     const LossFunction& loss, const OptimizerFactory& optimizer,
                                     const TrainerOptions& options);

}  // namespace ddp
