// Checkpoints of a training run: the model's parameters, the optimizer's state, the epoch, the
// step, the sampler's position and the RNG state, in a versioned binary format with a checksum
// over all of it. Rank 0 writes them (the caller decides who calls Save); every rank may load.
//
// Writing is atomic: a temporary file in the same directory, fsync, rename over the final name,
// fsync of the directory; a crash leaves either the old set of checkpoints or the new one, never
// a half-written file under a checkpoint's name. The newest `keep` are kept.
//
// Loading tries the newest first and verifies it (magic, version, length, checksum); a corrupt or
// truncated file is never loaded: it is skipped, with the reason, for the next newest.
//
// Threads and processes: a CheckpointDirectory holds only its path and may be used from any
// thread; one process (rank 0) saves into a directory at a time, while any may load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddp {

struct TrainingState {
  int64_t epoch = 0;
  int64_t step = 0;              // optimizer steps taken in the whole run
  int64_t sampler_position = 0;  // samples of this epoch already consumed, per rank
  std::string rng_state;         // the data generator's state, as the trainer serialized it
  std::vector<std::vector<float>> model;
  std::vector<std::vector<float>> optimizer;
};

struct LoadedCheckpoint {
  TrainingState state;
  std::string path;
  std::vector<std::string> skipped;  // newer files that were not valid: "<path>: <why>"
};

class CheckpointDirectory {
 public:
  // `directory` is created by the first Save when missing. `keep` >= 1 (less counts as 1).
  CheckpointDirectory(std::string directory, int keep);

  // Writes the checkpoint of `state.step` atomically, then removes all but the newest `keep`
  // (one that cannot be removed is logged and left). An error naming the path when the
  // directory cannot be made or the file not written; the previous checkpoints are intact then.
  ddprun::Status Save(const TrainingState& state);
  // The newest valid checkpoint, or nullopt when there is none (no directory, no valid file).
  // UNAVAILABLE naming the directory when it exists but cannot be read.
  ddprun::Result<std::optional<LoadedCheckpoint>> LoadNewest() const;
  // Checkpoint files, newest first. UNAVAILABLE when the directory cannot be read.
  ddprun::Result<std::vector<std::string>> List() const;

  const std::string& directory() const { return directory_; }

 private:
  std::string directory_;
  int keep_;
};

// The checkpoint format (exposed for tests): Encode/Decode of one file's bytes.
std::string EncodeCheckpoint(const TrainingState& state);
ddprun::Result<TrainingState> DecodeCheckpoint(const std::string& bytes);

}  // namespace ddp
