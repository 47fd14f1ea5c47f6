// SpawnWorker; see worker_process.h.
#include "ddprun/agent/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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

// In the child: sends errno to the parent through report_fd and exits 127.
[[noreturn]] void ReportErrnoAndExit(int report_fd) {
  int error = errno;
  ssize_t ignored = ::write(report_fd, &error, sizeof(error));
  (void)ignored;
  ::_exit(127);
}

// Runs in the child between fork and exec: async-signal-safe calls only. Reports a failure's
// errno through report_fd and exits 127.
[[noreturn]] void ExecChild(pid_t parent, const char* path, char* const argv[], char* const envp[],
                            int stdin_fd, int stdout_fd, int stderr_fd, int report_fd) {
  auto fail = [report_fd] { ReportErrnoAndExit(report_fd); };
  if (::setpgid(0, 0) != 0) fail();
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail();
  // The parent may have died before prctl took effect: then nobody would ever signal us.
  if (::getppid() != parent) ::_exit(127);
  if (::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(stdout_fd, STDOUT_FILENO) < 0 ||
      ::dup2(stderr_fd, STDERR_FILENO) < 0) {
    fail();
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
  ReportErrnoAndExit(report_fd);
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  pointers.reserve(strings.size() + 1);
  for (const auto& s : strings) pointers.push_back(const_cast<char*>(s.c_str()));
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

Result<SpawnedWorker> SpawnWorker(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& envp) {
  if (argv.empty()) return InvalidArgumentError("no worker program to start");
  Fd stdin_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (stdin_fd.get() < 0) return ErrnoError("opening /dev/null for a worker's stdin", errno);
  Fd out_read, out_write, err_read, err_write, report_read, report_write;
  for (auto [read_end, write_end] :
       {std::pair{&out_read, &out_write}, {&err_read, &err_write}, {&report_read, &report_write}}) {
    RETURN_IF_ERROR(MakePipe(*read_end, *write_end));
  }
  // Everything the child needs is prepared before fork: it may not allocate.
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_envp = CStrings(envp);
  const pid_t parent = ::getpid();

  const pid_t pid = ::fork();
  if (pid < 0) return ErrnoError("fork for worker " + argv[0], errno);
  if (pid == 0) {
    ExecChild(parent, c_argv[0], c_argv.data(), c_envp.data(), stdin_fd.get(), out_write.get(),
              err_write.get(), report_write.get());
  }
  // Also from this side, so that signalling the group works even before the child ran.
  ::setpgid(pid, pid);
  report_write.reset();
  out_write.reset();
  err_write.reset();

  // The report pipe closes on exec (success) or carries errno (failure).
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(report_read.get(), &child_errno, sizeof(child_errno));
  } while (n < 0 && errno == EINTR);
  if (n == sizeof(child_errno)) {
    int status;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return ErrnoError("exec " + argv[0], child_errno);
  }
  return SpawnedWorker{pid, out_read.release(), err_read.release()};
}

}  // namespace ddprun
