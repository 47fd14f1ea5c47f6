// JobCgroup; see job_cgroup.h.
#include "ddprun/agent/job_cgroup.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <sstream>
#include <string_view>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/process_clone.h"
#include "ddprun/base/timeline.h"

namespace ddprun {
namespace {

// The line of `text` that starts with `prefix`, without the prefix; nullopt when none does.
std::optional<std::string_view> LineAfter(std::string_view text, std::string_view prefix) {
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    if (line.substr(0, prefix.size()) == prefix) return line.substr(prefix.size());
    at = end + 1;
  }
  return std::nullopt;
}

// Where the cgroup v2 hierarchy is mounted ("" when it is not): where systemd mounts it (unified
// or hybrid), else from /proc/self/mountinfo, where the mount point is the fifth field and the
// file system type the first after " - ". (The usual places are looked at first, and no stream is
// used: this is on the way to every launch's first worker.)
std::string Cgroup2Mount() {
  for (const char* usual : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
    struct statfs file_system {};
    if (::statfs(usual, &file_system) == 0 && file_system.f_type == CGROUP2_SUPER_MAGIC) {
      return usual;
    }
  }
  auto text = ReadFileHead("/proc/self/mountinfo", 1 << 20);
  if (!text.ok()) return "";
  std::istringstream mountinfo(*text);
  std::string line;
  while (std::getline(mountinfo, line)) {
    const size_t separator = line.find(" - ");
    if (separator == std::string::npos || line.compare(separator + 3, 8, "cgroup2 ") != 0) {
      continue;
    }
    std::istringstream fields(line.substr(0, separator));
    std::string field;
    for (int i = 0; i < 5 && fields >> field; ++i) {
    }
    return field;
  }
  return "";
}

// This process's cgroup in the v2 hierarchy ("0::/path" in /proc/self/cgroup), or "".
std::string OwnCgroup() {
  auto text = ReadFileHead("/proc/self/cgroup", 64 << 10);
  if (!text.ok()) return "";
  return std::string(LineAfter(*text, "0::").value_or(""));
}

// How long the end of a job waits for the guardian: the 10 s it gives the cgroup to empty, and 2.
constexpr int kGuardianWaitMs = 12'000;

// The guardian's code runs in a process that shares ddprun's memory (or in a copy of it, where
// the architecture has no clone3 stub): raw system calls only (process_clone.h), every signal
// blocked for all its life.

// Writes `text` (NUL-terminated) into the file at `path`; whether it was written.
DDPRUN_CHILD_CODE bool WriteSmallFile(const char* path, const char* text) {
  const long fd =
      ChildSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>(path), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  long length = 0;
  while (text[length] != '\0') ++length;
  const bool written = ChildSyscall(SYS_write, fd, reinterpret_cast<long>(text), length) == length;
  ChildSyscall(SYS_close, fd);
  return written;
}

// Whether cgroup.events, open as `events_fd`, says "populated 0". Reading it from its start
// also re-arms its POLLPRI notification.
DDPRUN_CHILD_CODE bool Unpopulated(long events_fd) {
  if (events_fd < 0) return true;  // the cgroup is gone
  char text[256];
  const long n =
      ChildSyscall(SYS_pread64, events_fd, reinterpret_cast<long>(text), sizeof(text) - 1, 0);
  if (n <= 0) return true;
  static constexpr char kEmpty[] = "populated 0";
  for (long at = 0; at + static_cast<long>(sizeof(kEmpty)) - 1 <= n; ++at) {
    long matched = 0;
    while (kEmpty[matched] != '\0' && text[at + matched] == kEmpty[matched]) ++matched;
    if (kEmpty[matched] == '\0') return true;
  }
  return false;
}

// In a child that exits at once: proves that processes can be created in the cgroup.
DDPRUN_CHILD_CODE int ExitAtOnce(void*) { return 0; }

}  // namespace

// What the guardian reads, which stays allocated for all its life (and, should ddprun be killed,
// in the memory it then keeps alone).
struct JobCgroup::Guardian {
  std::string kill_file, events, dir;
  // Their C strings, taken before the guardian starts: its code calls no function of the
  // parent's (a sanitizer's bookkeeping of the call would be the parent's thread's).
  const char* kill_file_path = nullptr;
  const char* events_path = nullptr;
  const char* dir_path = nullptr;
  int keepalive = -1;  // the pipe's read end
  std::unique_ptr<std::byte[]> stack{new std::byte[kStackBytes]};
  pid_t pid = -1;
  static constexpr size_t kStackBytes = 16 * 1024;
  // The stack of the child that proved the cgroup usable (reaped in Create).
  std::unique_ptr<std::byte[]> probe_stack{new std::byte[kProbeStackBytes]};
  static constexpr size_t kProbeStackBytes = 4 * 1024;
};

namespace {

// The guardian's life: waits for its pipe to close, then kills what is left in the cgroup and
// removes it.
[[noreturn]] DDPRUN_CHILD_CODE int RunGuardian(void* argument) {
  const JobCgroup::Guardian& guardian = *static_cast<const JobCgroup::Guardian*>(argument);
  ChildSyscall(SYS_setsid);  // the terminal's Ctrl-C does not reach it (nor would it: all blocked)
  // Nothing of ddprun's held open (a pipeline reading ddprun's output must see its end): only
  // the pipe, as descriptor 3.
  const long null_fd =
      ChildSyscall(SYS_openat, AT_FDCWD, reinterpret_cast<long>("/dev/null"), O_RDWR);
  if (null_fd >= 0) {
    for (long fd = 0; fd < 3; ++fd) {
      if (fd != null_fd) ChildSyscall(SYS_dup3, null_fd, fd, 0);
    }
  }
  if (guardian.keepalive != 3 && ChildSyscall(SYS_dup3, guardian.keepalive, 3, 0) < 0) {
    ChildExit(1);
  }
  ChildSyscall(SYS_close_range, 4, ~0U, 0);
  char byte;
  ChildSyscall(SYS_read, 3, reinterpret_cast<long>(&byte), 1);
  // An empty cgroup (ddprun ended everything) is only removed: a kill costs a write lock on
  // every fork in the system (an RCU grace period), even when there is nothing to kill.
  const long events_fd = ChildSyscall(
      SYS_openat, AT_FDCWD, reinterpret_cast<long>(guardian.events_path), O_RDONLY | O_CLOEXEC);
  if (!Unpopulated(events_fd)) WriteSmallFile(guardian.kill_file_path, "1");
  // cgroup.events signals each change of "populated" with POLLPRI; 10 s at most.
  for (int i = 0; i < 100 && !Unpopulated(events_fd); ++i) {
    pollfd change{static_cast<int>(events_fd), POLLPRI, 0};
    const timespec slice{0, 100'000'000};
    ChildSyscall(SYS_ppoll, reinterpret_cast<long>(&change), 1, reinterpret_cast<long>(&slice), 0);
  }
  ChildSyscall(SYS_unlinkat, AT_FDCWD, reinterpret_cast<long>(guardian.dir_path), AT_REMOVEDIR);
  ChildExit(0);
}

}  // namespace

Result<std::unique_ptr<JobCgroup>> JobCgroup::Create() {
  const std::string mount = Cgroup2Mount();
  if (mount.empty()) return FailedPreconditionError("no cgroup v2 hierarchy is mounted");
  const std::string own = OwnCgroup();
  if (own.empty()) return FailedPreconditionError("this process is in no cgroup v2 cgroup");
  const std::string parent = mount + (own == "/" ? "" : own);
  const std::string path = parent + "/ddprun-" + std::to_string(::getpid());
  if (::mkdir(path.c_str(), 0755) != 0) {
    return FailedPreconditionError("cannot create the cgroup " + path + ": " +
                                   std::strerror(errno));
  }
  auto remove_and_fail = [&path](const std::string& reason) {
    ::rmdir(path.c_str());
    return FailedPreconditionError("cannot start processes in the cgroup " + path + ": " + reason);
  };
  const int dir_fd = ::open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return remove_and_fail(std::strerror(errno));
  auto guardian = std::make_unique<Guardian>();
  // Workers are created in the cgroup, never moved into it: prove that this works here. The
  // kernel decides when it creates the child; it exits at once, and is reaped once the
  // guardian is started (by then it has almost always exited), so that no zombie of ddprun's
  // stays in `ps` for the job's life.
  auto probe = StartResidentChild({ExitAtOnce, nullptr, dir_fd}, guardian->probe_stack.get(),
                                  Guardian::kProbeStackBytes);
  if (!probe.ok()) {
    ::close(dir_fd);
    return remove_and_fail(probe.status().message());
  }
  if (probe->pidfd >= 0) ::close(probe->pidfd);
  const pid_t probe_pid = probe->pid;
  auto reap_probe = [probe_pid] {
    siginfo_t probe_exit;
    while (::waitid(P_PID, static_cast<id_t>(probe_pid), &probe_exit, WEXITED) < 0 &&
           errno == EINTR) {
    }
  };
  guardian->kill_file = path + "/cgroup.kill";
  guardian->events = path + "/cgroup.events";
  guardian->dir = path;
  guardian->kill_file_path = guardian->kill_file.c_str();
  guardian->events_path = guardian->events.c_str();
  guardian->dir_path = guardian->dir.c_str();
  int keepalive[2];
  if (::pipe2(keepalive, O_CLOEXEC) != 0) {
    const int error = errno;
    reap_probe();
    ::close(dir_fd);
    ::rmdir(path.c_str());
    return ErrnoError("creating the cgroup guardian's pipe", error);
  }
  guardian->keepalive = keepalive[0];
  auto started = StartResidentChild({RunGuardian, guardian.get()}, guardian->stack.get(),
                                    Guardian::kStackBytes);
  ::close(keepalive[0]);
  reap_probe();
  if (!started.ok()) {
    ::close(keepalive[1]);
    ::close(dir_fd);
    ::rmdir(path.c_str());
    return Status(started.status().code(),
                  "starting the cgroup guardian: " + started.status().message());
  }
  if (started->pidfd >= 0) ::close(started->pidfd);
  guardian->pid = started->pid;
  return std::unique_ptr<JobCgroup>(new JobCgroup(path, dir_fd, std::move(guardian), keepalive[1]));
}

JobCgroup::JobCgroup(std::string path, int dir_fd, std::unique_ptr<Guardian> guardian,
                     int guardian_pipe)
    : path_(std::move(path)),
      dir_fd_(dir_fd),
      guardian_(std::move(guardian)),
      guardian_pipe_(guardian_pipe) {}

JobCgroup::~JobCgroup() {
  ::close(dir_fd_);
  BeginRemoval();
  // The guardian removes the cgroup (killing what is left first) and exits.
  const pid_t pid = guardian_->pid;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd >= 0) {
    pollfd exited{pidfd, POLLIN, 0};
    int ready;
    while ((ready = ::poll(&exited, 1, kGuardianWaitMs)) < 0 && errno == EINTR) {
    }
    ::close(pidfd);
    if (ready == 0) {
      GetLogger("agent")->error("the cgroup guardian (pid {}) has not finished; {} may remain", pid,
                                path_);
      (void)guardian_.release();  // it may still read it
      return;
    }
  }
  // Exited (or, without pidfds, about to: it acts as soon as the pipe closes, and its wait for
  // the cgroup to empty is bounded).
  siginfo_t ignored;
  while (::waitid(P_PID, static_cast<id_t>(pid), &ignored, WEXITED) < 0 && errno == EINTR) {
  }
  timeline::Note("the job's cgroup is removed");
}

void JobCgroup::BeginRemoval() {
  if (guardian_pipe_ < 0) return;
  ::close(guardian_pipe_);
  guardian_pipe_ = -1;
}

std::vector<pid_t> JobCgroup::own_children() const { return {guardian_->pid}; }

std::vector<pid_t> JobCgroup::Members() const { return ReadPidList(path_ + "/cgroup.procs"); }

Status JobCgroup::KillAll() const {
  const std::string kill_file = path_ + "/cgroup.kill";
  const int fd = ::open(kill_file.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0 || ::write(fd, "1", 1) != 1) {
    const int error = errno;
    if (fd >= 0) ::close(fd);
    return ErrnoError("killing the cgroup " + path_, error);
  }
  ::close(fd);
  return Status::Ok();
}

}  // namespace ddprun
