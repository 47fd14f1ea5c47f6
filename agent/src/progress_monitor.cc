// ProgressMonitor; see progress_monitor.h.
#include "progress_monitor.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {

void ProgressMonitor::Reset(size_t nproc) {
  workers_.clear();
  workers_.resize(nproc);
}

Result<int> ProgressMonitor::Prepare(int local_rank, const std::string& progress_file) {
  Worker& worker = workers_.at(static_cast<size_t>(local_rank));
  worker = Worker{};
  ASSIGN_OR_RETURN(worker.page, ProgressPageMapping::Create());
  worker.progress_file = progress_file;
  // A file left by an earlier run in the same place is not this worker's progress.
  if (::unlink(progress_file.c_str()) != 0 && errno != ENOENT) {
    return ErrnoError("removing an old progress file " + progress_file, errno);
  }
  return worker.page.fd();
}

void ProgressMonitor::Started(int local_rank, Clock::time_point now) {
  workers_.at(static_cast<size_t>(local_rank)).last_progress = now;
}

bool ProgressMonitor::FileChanged(Worker& worker) {
  struct stat about {};
  if (::stat(worker.progress_file.c_str(), &about) != 0) return false;  // not written yet
  const bool same = about.st_size == worker.file_size &&
                    about.st_mtim.tv_sec == worker.file_mtime.tv_sec &&
                    about.st_mtim.tv_nsec == worker.file_mtime.tv_nsec;
  if (same) return false;
  worker.file_size = about.st_size;
  worker.file_mtime = about.st_mtim;
  // A step number, if the worker wrote one: a short read of the start is enough.
  char text[32] = {};
  ssize_t length = 0;
  const int fd = ::open(worker.progress_file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd >= 0) {
    length = ::read(fd, text, sizeof text - 1);
    ::close(fd);
  }
  if (length > 0) {
    if (auto step = ParseInteger<int64_t>(Trim({text, static_cast<size_t>(length)}), 0)) {
      worker.file_step = *step;
    }
  }
  return true;
}

void ProgressMonitor::Sample(int local_rank, uint64_t output_bytes, Clock::time_point now,
                             RankProgress& rank) {
  Worker& worker = workers_.at(static_cast<size_t>(local_rank));
  bool changed = false;
  std::chrono::nanoseconds waits{0};
  Clock::time_point step_reported_at = now;
  bool finished = false;
  if (const ProgressPage* page = worker.page.page()) {
    // Completed first: a collective counted complete is then always counted started too.
    const uint64_t completed = page->collectives_completed.load(std::memory_order_relaxed);
    const uint64_t issued = page->collectives_issued.load(std::memory_order_relaxed);
    const int64_t step = page->step.load(std::memory_order_acquire);
    const uint64_t reported_ns = page->step_reported_ns.load(std::memory_order_relaxed);
    waits = std::chrono::nanoseconds(page->collective_wait_ns.load(std::memory_order_relaxed));
    if (step >= 0 && reported_ns != 0) {
      step_reported_at = Clock::time_point(std::chrono::nanoseconds(reported_ns));
    }
    finished = page->finished_ns.load(std::memory_order_relaxed) != 0;
    changed = issued != worker.issued || completed != worker.completed || step != worker.page_step;
    worker.issued = issued;
    worker.completed = completed;
    worker.page_step = step;
  }
  if (FileChanged(worker)) changed = true;
  if (output_is_progress_ && output_bytes != worker.output_bytes) changed = true;
  worker.output_bytes = output_bytes;
  if (changed) {
    worker.last_progress = now;
    worker.progressed = true;
  }
  rank.step = worker.page_step >= 0 ? worker.page_step : worker.file_step;
  worker.step_timer.Sample(rank.step, step_reported_at, waits);
  rank.step_time = worker.step_timer.step_time();
  rank.collectives = worker.issued;
  rank.in_collective = worker.issued > worker.completed;
  rank.progressed = worker.progressed;
  rank.finished = finished;
  rank.idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - worker.last_progress);
}

}  // namespace ddprun
