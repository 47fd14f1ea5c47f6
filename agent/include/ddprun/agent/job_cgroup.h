// JobCgroup: a cgroup v2 of the job's own that holds every worker and whatever they start (a
// process cannot leave it by setsid or a double fork), and a guardian process that kills the
// cgroup and removes it once ddprun's end of a pipe closes: at ddprun's exit, and also when
// ddprun is killed with SIGKILL, so nothing the job started outlives it.
//
// The guardian is forked when the cgroup is made: make it before the process starts threads.
// It runs in a session of its own (the terminal's Ctrl-C does not reach it), holds none of
// ddprun's descriptors but its pipe, and is not in the cgroup.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

class JobCgroup {
 public:
  // A cgroup below this process's own (in the cgroup v2 hierarchy), named after this process,
  // with its guardian. FAILED_PRECONDITION naming the reason where there is no writable cgroup
  // v2 hierarchy (not mounted, a cgroup v1 system, no permission).
  static Result<std::unique_ptr<JobCgroup>> Create();
  // Kills what is still in the cgroup and removes it (through the guardian, which this waits
  // for, a few seconds at most).
  ~JobCgroup();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  // The file a new process writes "0" to (between fork and exec) to join the cgroup.
  std::string procs_file() const { return path_ + "/cgroup.procs"; }
  // The processes in the cgroup now.
  std::vector<pid_t> Members() const;
  // SIGKILL to every process in the cgroup at once (cgroup.kill).
  Status KillAll() const;
  pid_t guardian_pid() const { return guardian_; }

 private:
  JobCgroup(std::string path, pid_t guardian, int guardian_pipe)
      : path_(std::move(path)), guardian_(guardian), guardian_pipe_(guardian_pipe) {}

  std::string path_;
  pid_t guardian_;
  int guardian_pipe_;  // its write end: closing it (or dying) tells the guardian to act
};

}  // namespace ddprun
