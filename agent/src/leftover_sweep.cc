// LeftoverSweep; see leftover_sweep.h.
#include "ddprun/agent/leftover_sweep.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/worker_failure.h"

namespace ddprun {
namespace {

bool Contains(const std::vector<pid_t>& pids, pid_t pid) {
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

// Whether `pid` still runs: it exists and is no zombie (one that is not this process's child is
// its parent's to reap, and ends nothing by being signalled).
bool Running(pid_t pid) {
  auto stat = ReadFileHead("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!stat.ok()) return false;
  const std::string& text = *stat;
  const size_t name_end = text.rfind(')');  // the name may hold spaces and parentheses
  return name_end != std::string::npos && name_end + 2 < text.size() && text[name_end + 2] != 'Z';
}

void Signal(pid_t pid, int signal_number) {
  if (::kill(pid, signal_number) != 0 && errno != ESRCH) {
    GetLogger("agent")->error("cannot send {} to pid {}: {}", SignalName(signal_number), pid,
                              std::strerror(errno));
  }
}

// How long a sweep waits for one of the processes it signalled to exit before it looks again
// for new ones (the descendants of those ended, which become this process's children).
constexpr std::chrono::milliseconds kRescanAtLeast{50};

// Waits until one of `pids` has exited or `until`, whichever is first: on their pidfds, so a
// sweep ends the moment its processes have (a process a signal has reached may take a little
// while to exit). Without pidfds (Linux < 5.3), 10 ms.
void WaitForAnExit(const std::vector<pid_t>& pids, std::chrono::steady_clock::time_point until) {
  std::vector<pollfd> exits;
  for (pid_t pid : pids) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd >= 0) exits.push_back({pidfd, POLLIN, 0});
  }
  if (exits.empty()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return;
  }
  const auto wait =
      std::chrono::ceil<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
  ::poll(exits.data(), exits.size(), static_cast<int>(std::max<int64_t>(wait.count(), 0)));
  for (const pollfd& exit : exits) ::close(exit.fd);
}

}  // namespace

Status BecomeChildSubreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
    return ErrnoError("becoming a child subreaper", errno);
  }
  return Status::Ok();
}

std::vector<pid_t> ChildrenOfThisProcess() {
  std::vector<pid_t> children;
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return children;
  while (const dirent* task = ::readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    const std::vector<pid_t> of_task =
        ReadPidList(std::string("/proc/self/task/") + task->d_name + "/children");
    children.insert(children.end(), of_task.begin(), of_task.end());
  }
  ::closedir(tasks);
  return children;
}

std::vector<pid_t> LeftoverSweep::Left(const std::vector<pid_t>& running_workers) const {
  std::vector<pid_t> left;
  for (pid_t pid : cgroup_ ? cgroup_->Members() : ChildrenOfThisProcess()) {
    if (!Contains(running_workers, pid) && !Contains(spared_, pid) && Running(pid)) {
      left.push_back(pid);
    }
  }
  return left;
}

void LeftoverSweep::ReapExited(const std::vector<pid_t>& running_workers) const {
  for (pid_t child : ChildrenOfThisProcess()) {
    if (Contains(running_workers, child) || Contains(spared_, child)) continue;
    while (::waitpid(child, nullptr, WNOHANG) < 0 && errno == EINTR) {
    }
  }
}

size_t LeftoverSweep::EndAll(const std::vector<pid_t>& running_workers) const {
  using Clock = std::chrono::steady_clock;
  ReapExited(running_workers);
  std::vector<pid_t> left = Left(running_workers);
  if (left.empty()) return 0;
  auto log = GetLogger("agent");
  std::set<pid_t> seen;
  const auto kill_at = Clock::now() + grace_;
  const auto give_up_at = kill_at + kill_timeout_;
  bool killing = false;
  while (!left.empty()) {
    const auto now = Clock::now();
    if (!killing && now >= kill_at) {
      log->warn(
          "{} process(es) the workers left are still running {} ms after SIGTERM; sending "
          "SIGKILL",
          left.size(), grace_.count());
      killing = true;
      if (!cgroup_ || !cgroup_->KillAll().ok()) {
        for (pid_t pid : left) Signal(pid, SIGKILL);
      }
    }
    if (now >= give_up_at) {
      log->error("{} process(es) the workers left survive SIGKILL; giving up on them", left.size());
      break;
    }
    for (pid_t pid : left) {
      if (!seen.insert(pid).second && !killing) continue;
      // Newly found (or, once killing, every one): descendants of one ended are found in turn.
      if (killing) {
        Signal(pid, SIGKILL);
      } else {
        Signal(pid, SIGTERM);
        Signal(pid, SIGCONT);
      }
    }
    WaitForAnExit(left, std::min(killing ? give_up_at : kill_at, Clock::now() + kRescanAtLeast));
    ReapExited(running_workers);
    left = Left(running_workers);
  }
  log->info("ended {} process(es) the workers left behind", seen.size());
  return seen.size();
}

}  // namespace ddprun
