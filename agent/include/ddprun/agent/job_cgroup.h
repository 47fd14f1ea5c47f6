// JobCgroup: a cgroup v2 of the job's own that holds every worker and whatever they start (a
// process cannot leave it by setsid or a double fork), and a guardian process that kills the
// cgroup and removes it once ddprun's end of a pipe closes: at ddprun's exit, and also when
// ddprun is killed with SIGKILL, so nothing the job started outlives it.
//
// The guardian starts when the cgroup is made. It shares ddprun's memory (process_clone.h), so it
// costs no copy to start or to end, and keeps that memory should ddprun be killed; it runs in a
// session of its own with every signal blocked (the terminal's Ctrl-C does not reach it), holds
// none of ddprun's descriptors but its pipe, and is not in the cgroup. (Before Linux 5.16 a crash
// of ddprun that dumps core also ends every process sharing its memory, the guardian with it;
// the workers' parent-death signal still ends them then, not what they daemonised.)
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
  // v2 hierarchy (not mounted, a cgroup v1 system, no permission) or processes cannot be
  // created in one (clone3's CLONE_INTO_CGROUP: Linux 5.7).
  static Result<std::unique_ptr<JobCgroup>> Create();
  // Kills what is still in the cgroup and removes it (through the guardian, which this waits
  // for, a few seconds at most).
  ~JobCgroup();
  // Tells the guardian to act now, without waiting for it: the job is over, and the rest of
  // ddprun's end runs meanwhile. Members, KillAll and new processes in the cgroup are over too.
  void BeginRemoval();
  JobCgroup(const JobCgroup&) = delete;
  JobCgroup& operator=(const JobCgroup&) = delete;

  const std::string& path() const { return path_; }
  // A descriptor of the cgroup's directory, for starting processes in it (SpawnOptions).
  int dir_fd() const { return dir_fd_; }
  // The processes in the cgroup now.
  std::vector<pid_t> Members() const;
  // SIGKILL to every process in the cgroup at once (cgroup.kill).
  Status KillAll() const;
  // This object's own children (the guardian; the child that proved the cgroup usable is
  // reaped in Create): not the job's, for LeftoverSweep to spare. The guardian's first.
  std::vector<pid_t> own_children() const;

  struct Guardian;  // what the guardian process reads (job_cgroup.cc)

 private:
  JobCgroup(std::string path, int dir_fd, std::unique_ptr<Guardian> guardian, int guardian_pipe);

  std::string path_;
  int dir_fd_;  // O_PATH, close-on-exec
  std::unique_ptr<Guardian> guardian_;
  int guardian_pipe_;  // its write end: closing it (or dying) tells the guardian to act
};

}  // namespace ddprun
