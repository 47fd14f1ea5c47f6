// JobCgroup; see job_cgroup.h.
#include "ddprun/agent/job_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "ddprun/base/logging.h"

namespace ddprun {
namespace {

// Where the cgroup v2 hierarchy is mounted ("" when it is not), from /proc/self/mountinfo: the
// mount point is the fifth field, the file system type the first after " - ".
std::string Cgroup2Mount() {
  std::ifstream mountinfo("/proc/self/mountinfo");
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
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

// Async-signal-safe: the guardian runs between fork and _exit in a process that may have threads.
bool WriteSmallFile(const char* path, const char* text) {
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t length = static_cast<ssize_t>(std::strlen(text));
  const bool written = ::write(fd, text, static_cast<size_t>(length)) == length;
  ::close(fd);
  return written;
}

// Async-signal-safe: whether cgroup.events says "populated 0".
bool Unpopulated(const char* events_path) {
  const int fd = ::open(events_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // the cgroup is gone
  char text[256];
  const ssize_t n = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (n <= 0) return true;
  text[n] = '\0';
  return std::strstr(text, "populated 0") != nullptr;
}

// The guardian's life, in the forked child (async-signal-safe calls only). It proves the cgroup
// can be joined and left (by joining it and going back), says so through `report`, then waits
// for `keepalive` to close and kills and removes the cgroup.
[[noreturn]] void RunGuardian(int keepalive, int report, const char* join, const char* leave,
                              const char* kill_file, const char* events, const char* dir) {
  ::setsid();
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  for (int signal_number : {SIGINT, SIGHUP, SIGQUIT, SIGTERM, SIGPIPE}) {
    ::sigaction(signal_number, &ignore, nullptr);
  }
  int error = 0;
  if (!WriteSmallFile(join, "0") || !WriteSmallFile(leave, "0")) error = errno == 0 ? EIO : errno;
  (void)!::write(report, &error, sizeof(error));
  if (error != 0) ::_exit(1);
  // Nothing of ddprun's held open (a pipeline reading ddprun's output must see its end): only
  // the keepalive pipe, as descriptor 3.
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    for (int fd = 0; fd < 3; ++fd) ::dup2(null_fd, fd);
  }
  if (::dup2(keepalive, 3) < 0) ::_exit(1);
  ::close_range(4, ~0U, 0);
  char byte;
  while (::read(3, &byte, 1) < 0 && errno == EINTR) {
  }
  WriteSmallFile(kill_file, "1");
  const timespec tick{0, 10'000'000};
  for (int i = 0; i < 1000 && !Unpopulated(events); ++i) ::nanosleep(&tick, nullptr);
  ::rmdir(dir);
  ::_exit(0);
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
  // Everything the guardian needs, prepared before fork.
  const std::string join = path + "/cgroup.procs", leave = parent + "/cgroup.procs",
                    kill_file = path + "/cgroup.kill", events = path + "/cgroup.events";
  int keepalive[2], report[2];
  if (::pipe2(keepalive, O_CLOEXEC) != 0) {
    const int error = errno;
    ::rmdir(path.c_str());
    return ErrnoError("creating the cgroup guardian's pipe", error);
  }
  if (::pipe2(report, O_CLOEXEC) != 0) {
    const int error = errno;
    ::close(keepalive[0]);
    ::close(keepalive[1]);
    ::rmdir(path.c_str());
    return ErrnoError("creating the cgroup guardian's pipe", error);
  }
  const pid_t guardian = ::fork();
  if (guardian == 0) {
    ::close(keepalive[1]);
    ::close(report[0]);
    RunGuardian(keepalive[0], report[1], join.c_str(), leave.c_str(), kill_file.c_str(),
                events.c_str(), path.c_str());
  }
  const int fork_error = errno;
  ::close(keepalive[0]);
  ::close(report[1]);
  int guardian_error = guardian < 0 ? fork_error : 0;
  if (guardian > 0) {
    ssize_t n;
    do {
      n = ::read(report[0], &guardian_error, sizeof(guardian_error));
    } while (n < 0 && errno == EINTR);
    if (n != sizeof(guardian_error)) guardian_error = EIO;
  }
  ::close(report[0]);
  if (guardian_error != 0) {
    ::close(keepalive[1]);
    if (guardian > 0) ::waitpid(guardian, nullptr, 0);
    ::rmdir(path.c_str());
    return FailedPreconditionError("cannot move processes into the cgroup " + path + ": " +
                                   std::strerror(guardian_error));
  }
  return std::unique_ptr<JobCgroup>(new JobCgroup(path, guardian, keepalive[1]));
}

JobCgroup::~JobCgroup() {
  ::close(guardian_pipe_);
  // The guardian kills what is left, waits for the cgroup to empty and removes it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
  while (::waitpid(guardian_, nullptr, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      GetLogger("agent")->error("the cgroup guardian (pid {}) has not finished; {} may remain",
                                guardian_, path_);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

std::vector<pid_t> JobCgroup::Members() const {
  std::vector<pid_t> members;
  std::ifstream procs(procs_file());
  pid_t pid;
  while (procs >> pid) members.push_back(pid);
  return members;
}

Status JobCgroup::KillAll() const {
  if (!WriteSmallFile((path_ + "/cgroup.kill").c_str(), "1")) {
    return ErrnoError("killing the cgroup " + path_, errno);
  }
  return Status::Ok();
}

}  // namespace ddprun
