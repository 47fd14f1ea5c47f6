// The probes, on the fresh daemon before the load: one resource at a time, the ones that leave
// the least freed memory behind (which later allocations would reuse unseen) first. Each reads
// the daemon's resident memory before and after: jobs made and abandoned, one join adopting a
// huge round, a crowd of streams in one job, and pending waits on many keys.
#pragma once

#include <string>

#include "load_options.h"

namespace ddprun::daemon_load {

// The daemon's VmRSS (KiB) around each probe, and what each probe saw.
struct ProbeFigures {
  long rss_start = 0;
  long rss_before_jobs = 0;
  int probe_written = 0;  // joins written by the job probe
  long probe_jobs_seen = 0;
  long rss_jobs = 0;
  long rss_before_resume = 0;
  long rss_resume = 0;
  long rss_resume_after = 0;
  long rss_before_crowd = 0;
  int crowd_written = 0;
  long crowd_nodes = 0;
  long rss_after_crowd = 0;
  int probe_crowd_ready = 0;
  long rss_after_waits = 0;
  int probe_crowd_other = 0;  // crowd streams that ended other than CANCELLED
  std::string probe_crowd_example;
  long rss_probes_closed = 0;
};

ProbeFigures RunProbes(const Options& options);

}  // namespace ddprun::daemon_load
