// ProgressMonitor: what the agent knows of its workers' progress, read when it samples (a timer
// while hang detection is on). A worker has three sources, and any change in one is progress:
// - its progress page, the runtime's counters of collectives and steps (progress_page.h),
//   handed to the worker as descriptor DDPRUN_PROGRESS_FD;
// - its progress file, DDPRUN_PROGRESS_FILE: any write is a heartbeat, and a number written
//   there is the worker's step (the contract for programs of any language);
// - with --hang_progress=output, the bytes it wrote to stdout or stderr.
// Sampling reads the page and stats the file: no system call in the worker, one stat per worker
// here. It also times the worker's steps (step_timer.h) for straggler detection: by the times
// the page says its steps were reported, or by the samples' for a progress file. Not thread-safe:
// the supervisor's loop owns it.
#pragma once

#include <sys/stat.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ddprun/base/hang_finder.h"
#include "ddprun/base/progress_page.h"
#include "ddprun/base/status.h"
#include "ddprun/base/step_timer.h"

namespace ddprun {

class ProgressMonitor {
 public:
  using Clock = std::chrono::steady_clock;

  explicit ProgressMonitor(bool output_is_progress) : output_is_progress_(output_is_progress) {}

  // Forgets the last attempt's workers and makes room for `nproc`.
  void Reset(size_t nproc);
  // Creates the page of the worker of `local_rank`, whose progress file is `progress_file` (it
  // need not exist). Returns the page's descriptor, for the worker to inherit.
  Result<int> Prepare(int local_rank, const std::string& progress_file);
  // The worker started at `now`: its idle time counts from here.
  void Started(int local_rank, Clock::time_point now);
  // The worker's progress at `now`; `output_bytes`: what its streams have delivered so far.
  // Fills the counters, `progressed`, `idle` and `step_time` of `rank`; its identity is the
  // caller's.
  void Sample(int local_rank, uint64_t output_bytes, Clock::time_point now, RankProgress& rank);

 private:
  struct Worker {
    ProgressPageMapping page;
    std::string progress_file;
    // What was seen last: any difference is progress.
    uint64_t issued = 0;
    uint64_t completed = 0;
    int64_t page_step = -1;
    struct timespec file_mtime {};
    off_t file_size = -1;
    int64_t file_step = -1;
    uint64_t output_bytes = 0;
    Clock::time_point last_progress;
    bool progressed = false;
    StepTimer step_timer;
  };
  // Stats the progress file; true when it was written since the last look.
  static bool FileChanged(Worker& worker);

  const bool output_is_progress_;
  std::vector<Worker> workers_;
};

}  // namespace ddprun
