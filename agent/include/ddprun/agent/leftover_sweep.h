// LeftoverSweep: ends the processes a job's workers leave behind (a data server, a TensorBoard,
// anything daemonised with setsid or a double fork), at the end of each attempt and at exit.
//
// They are found in the job's cgroup where there is one (JobCgroup), and otherwise among this
// process's children: ddprun is a child subreaper (PR_SET_CHILD_SUBREAPER), so an orphaned
// descendant becomes its child rather than init's, and so do the descendants of each one ended.
// Each gets SIGTERM with SIGCONT (a stopped process ends too), then SIGKILL after the grace;
// those that are this process's children are reaped. Every wait is bounded.
//
// Only for a process whose children are all the job's (ddprun): any child but the workers still
// running and the ones named at construction counts as left behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <vector>

#include "ddprun/agent/job_cgroup.h"

namespace ddprun {

// Makes this process a child subreaper; an error if the kernel refuses.
Status BecomeChildSubreaper();

// The children of this process now (every thread's, from /proc/self/task/*/children).
std::vector<pid_t> ChildrenOfThisProcess();

class LeftoverSweep {
 public:
  // `cgroup` may be null (none could be made); it outlives the sweep. `spared`: children that
  // are not the job's (the cgroup's guardian).
  LeftoverSweep(const JobCgroup* cgroup, std::vector<pid_t> spared, std::chrono::milliseconds grace,
                std::chrono::milliseconds kill_timeout)
      : cgroup_(cgroup), spared_(std::move(spared)), grace_(grace), kill_timeout_(kill_timeout) {}

  // Ends every process left but `running_workers`; blocks until they are gone (grace plus
  // kill_timeout at most). Returns how many there were.
  size_t EndAll(const std::vector<pid_t>& running_workers) const;

 private:
  // The job's processes now, but the running workers and the spared.
  std::vector<pid_t> Left(const std::vector<pid_t>& running_workers) const;
  // Reaps those of this process's children that have exited (but the running workers and the
  // spared).
  void ReapExited(const std::vector<pid_t>& running_workers) const;

  const JobCgroup* cgroup_;
  std::vector<pid_t> spared_;
  std::chrono::milliseconds grace_;
  std::chrono::milliseconds kill_timeout_;
};

}  // namespace ddprun
