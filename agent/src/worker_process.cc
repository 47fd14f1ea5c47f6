// SpawnWorker; see worker_process.h.
#include "ddprun/agent/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

// Owns a file descriptor; closes it unless released.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }
  void reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

Status MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("creating a pipe for a worker", errno);
  read_end.reset(fds[0]);
  write_end.reset(fds[1]);
  return Status::Ok();
}

// What the child was doing when it failed, reported with errno.
enum class ChildStep : int { kSetUp = 0, kJoinCgroup = 1, kExec = 2, kChangeDirectory = 3 };

struct ChildFailure {
  ChildStep step;
  int error;
};

// In the child: sends the step and errno to the parent through report_fd and exits 127.
[[noreturn]] void ReportErrnoAndExit(int report_fd, ChildStep step) {
  const ChildFailure failure{step, errno};
  ssize_t ignored = ::write(report_fd, &failure, sizeof(failure));
  (void)ignored;
  ::_exit(127);
}

// The descriptors the child puts in place, and what it sets up, prepared before fork.
struct ChildSetup {
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  int controlling_terminal;       // -1: none, and the child only gets a process group of its own
  const char* cgroup_procs_file;  // null: none
  const char* working_dir;        // null: the parent's
  int inherited_fd;               // -1: none
  bool debuggable_by_parent;
};

// Runs in the child between fork and exec: async-signal-safe calls only. Reports a failure's
// step and errno through report_fd and exits 127.
[[noreturn]] void ExecChild(pid_t parent, const char* path, char* const argv[], char* const envp[],
                            const ChildSetup& setup, int report_fd) {
  auto fail = [report_fd] { ReportErrnoAndExit(report_fd, ChildStep::kSetUp); };
  if (setup.controlling_terminal >= 0) {
    // A session of its own (its own process group too) whose controlling terminal is its stdout.
    if (::setsid() < 0 || ::ioctl(setup.controlling_terminal, TIOCSCTTY, 0) != 0) fail();
  } else if (::setpgid(0, 0) != 0) {
    fail();
  }
  if (setup.cgroup_procs_file != nullptr) {
    const int procs = ::open(setup.cgroup_procs_file, O_WRONLY | O_CLOEXEC);
    if (procs < 0 || ::write(procs, "0", 1) != 1) {
      ReportErrnoAndExit(report_fd, ChildStep::kJoinCgroup);
    }
    ::close(procs);
  }
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail();
  // The parent may have died before prctl took effect: then nobody would ever signal us.
  if (::getppid() != parent) ::_exit(127);
  if (::dup2(setup.stdin_fd, STDIN_FILENO) < 0 || ::dup2(setup.stdout_fd, STDOUT_FILENO) < 0 ||
      ::dup2(setup.stderr_fd, STDERR_FILENO) < 0) {
    fail();
  }
  // Its number is the parent's, above the standard streams (set up just before).
  if (setup.inherited_fd >= 0 && ::fcntl(setup.inherited_fd, F_SETFD, 0) != 0) fail();
  // Under Yama's ptrace_scope 1 only ancestors may attach; this names the parent, whose
  // descendants (a debugger it starts) then may too. EINVAL where Yama is not: nothing to do.
  if (setup.debuggable_by_parent) ::prctl(PR_SET_PTRACER, parent, 0, 0, 0);
  if (setup.working_dir != nullptr && ::chdir(setup.working_dir) != 0) {
    ReportErrnoAndExit(report_fd, ChildStep::kChangeDirectory);
  }
  // Dispositions set to "ignore" survive exec (the agent ignores SIGPIPE); handlers do not.
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  for (int signal_number = 1; signal_number < NSIG; ++signal_number) {
    ::sigaction(signal_number, &default_action, nullptr);
  }
  sigset_t empty;
  sigemptyset(&empty);
  ::sigprocmask(SIG_SETMASK, &empty, nullptr);
  ::execve(path, argv, envp);
  ReportErrnoAndExit(report_fd, ChildStep::kExec);
}

// A pseudo-terminal pair: raw output (no '\n' to "\r\n"), no echo, of `size`.
Status OpenTerminal(Fd& master, Fd& slave, const TerminalSize& size) {
  master.reset(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (master.get() < 0) return ErrnoError("opening a pseudo-terminal for a worker", errno);
  char name[128];
  if (::grantpt(master.get()) != 0 || ::unlockpt(master.get()) != 0 ||
      ::ptsname_r(master.get(), name, sizeof(name)) != 0) {
    return ErrnoError("preparing a pseudo-terminal for a worker", errno);
  }
  slave.reset(::open(name, O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (slave.get() < 0) return ErrnoError(std::string("opening ") + name, errno);
  termios mode{};
  if (::tcgetattr(slave.get(), &mode) != 0) return ErrnoError("reading a terminal's mode", errno);
  mode.c_oflag &= ~static_cast<tcflag_t>(OPOST);
  mode.c_lflag &= ~static_cast<tcflag_t>(ECHO | ECHONL);
  if (::tcsetattr(slave.get(), TCSANOW, &mode) != 0) {
    return ErrnoError("setting a terminal's mode", errno);
  }
  return ResizeTerminal(master.get(), size);
}

// The two ends of one output stream: a pipe or a terminal.
Status OpenOutput(OutputChannel channel, const TerminalSize& size, Fd& ours, Fd& theirs) {
  if (channel == OutputChannel::kTerminal) return OpenTerminal(ours, theirs, size);
  return MakePipe(ours, theirs);
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

TerminalSize TerminalSizeOf(int fd) {
  winsize window{};
  if (::ioctl(fd, TIOCGWINSZ, &window) != 0) return {};
  return {window.ws_row, window.ws_col};
}

Status ResizeTerminal(int master_fd, const TerminalSize& size) {
  if (size.rows == 0 || size.cols == 0) return Status::Ok();
  winsize window{size.rows, size.cols, 0, 0};
  if (::ioctl(master_fd, TIOCSWINSZ, &window) != 0) {
    return ErrnoError("setting a worker's terminal size", errno);
  }
  return Status::Ok();
}

Result<SpawnedWorker> SpawnWorker(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& envp,
                                  const SpawnOptions& options) {
  if (argv.empty()) return InvalidArgumentError("no worker program to start");
  Fd out_ours, out_theirs, err_ours, err_theirs, report_read, report_write;
  RETURN_IF_ERROR(OpenOutput(options.stdout_channel, options.terminal_size, out_ours, out_theirs));
  RETURN_IF_ERROR(OpenOutput(options.stderr_channel, options.terminal_size, err_ours, err_theirs));
  RETURN_IF_ERROR(MakePipe(report_read, report_write));
  const bool stdout_terminal = options.stdout_channel == OutputChannel::kTerminal;
  // The worker's stdin, and (forwarded) the end its input is written to.
  Fd in_theirs, in_ours;
  int stdin_fd = STDIN_FILENO;  // kInherited
  // Inheriting a stdin this process does not have (descriptor 0 closed) reads /dev/null.
  const bool no_stdin = ::fcntl(STDIN_FILENO, F_GETFD) < 0;
  switch (options.stdin_channel == InputChannel::kInherited && no_stdin ? InputChannel::kNull
                                                                        : options.stdin_channel) {
    case InputChannel::kNull:
      in_theirs.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (in_theirs.get() < 0) return ErrnoError("opening /dev/null for a worker's stdin", errno);
      stdin_fd = in_theirs.get();
      break;
    case InputChannel::kInherited:
      break;
    case InputChannel::kForwarded:
      if (stdout_terminal) {
        in_ours.reset(::fcntl(out_ours.get(), F_DUPFD_CLOEXEC, 0));
        if (in_ours.get() < 0) return ErrnoError("sharing a worker's terminal", errno);
        stdin_fd = out_theirs.get();
      } else {
        RETURN_IF_ERROR(MakePipe(in_theirs, in_ours));
        stdin_fd = in_theirs.get();
      }
      break;
  }
  const ChildSetup setup{
      stdin_fd,
      out_theirs.get(),
      err_theirs.get(),
      stdout_terminal ? out_theirs.get() : -1,
      options.cgroup_procs_file.empty() ? nullptr : options.cgroup_procs_file.c_str(),
      options.working_dir.empty() ? nullptr : options.working_dir.c_str(),
      options.inherited_fd,
      options.debuggable_by_parent};
  // Everything the child needs is prepared before fork: it may not allocate.
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_envp = CStrings(envp);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork for worker " + argv[0], errno);
  if (pid == 0)
    ExecChild(parent, c_argv[0], c_argv.data(), c_envp.data(), setup, report_write.get());
  // Also from this side, so that signalling the group works even before the child ran (a
  // session leader's group exists already: then this fails, harmlessly).
  if (!stdout_terminal) ::setpgid(pid, pid);
  report_write.reset();
  out_theirs.reset();
  err_theirs.reset();
  in_theirs.reset();

  // The report pipe closes on exec (success) or carries the failure.
  ChildFailure failure{};
  ssize_t n;
  do {
    n = ::read(report_read.get(), &failure, sizeof(failure));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(failure)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    switch (failure.step) {
      case ChildStep::kSetUp:
        return ErrnoError("setting up the process for worker " + argv[0], failure.error);
      case ChildStep::kJoinCgroup:
        return ErrnoError(
            "moving worker " + argv[0] + " into the job's cgroup " + options.cgroup_procs_file,
            failure.error);
      case ChildStep::kChangeDirectory:
        return ErrnoError(
            "entering the working directory " + options.working_dir + " for " + argv[0],
            failure.error);
      case ChildStep::kExec:
        break;
    }
    return ErrnoError("exec " + argv[0], failure.error);
  }
  return SpawnedWorker{pid, out_ours.release(), err_ours.release(), in_ours.release()};
}

}  // namespace ddprun
