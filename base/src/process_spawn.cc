// SpawnWorker and WorkerSpawner; see process_spawn.h.
#include "ddprun/base/process_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>

#include "ddprun/base/parsing.h"
#include "ddprun/base/process_clone.h"
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
enum class ChildStep : int { kSetUp = 0, kExec = 1, kChangeDirectory = 2, kBind = 3 };

// The kernel's masks of a binding: CPUs for sched_setaffinity, nodes for set_mempolicy.
struct BindingMasks {
  std::vector<unsigned long> cpus;
  std::vector<unsigned long> nodes;

  static void Set(std::vector<unsigned long>& mask, int bit) {
    constexpr int kBits = 8 * sizeof(unsigned long);
    const auto word = static_cast<size_t>(bit / kBits);
    if (mask.size() <= word) mask.resize(word + 1, 0);
    mask[word] |= 1ul << (bit % kBits);
  }
  static BindingMasks Of(const WorkerBinding& binding) {
    BindingMasks masks;
    for (int cpu : binding.cpus) Set(masks.cpus, cpu);
    Set(masks.nodes, binding.memory_node);
    return masks;
  }
};

// Everything the child needs, prepared before it starts (it may not allocate), and where it
// reports a failure: this memory is shared with the child until it execs.
struct ChildSetup {
  const char* path = nullptr;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
  pid_t parent = -1;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int controlling_terminal = -1;  // -1: none, and the child only gets a process group of its own
  const char* working_dir = nullptr;  // null: the parent's
  int inherited_fd = -1;              // -1: none
  bool debuggable_by_parent = false;
  // --numa_binding's masks (BindingMasks, kept by the parent), as plain words: the child calls
  // no function, not even a vector's accessors. Null: no binding.
  const unsigned long* cpu_mask = nullptr;
  long cpu_mask_bytes = 0;
  const unsigned long* node_mask = nullptr;
  long node_mask_bits = 0;
  // Written by the child when it fails, read by the parent once it exited.
  bool failed = false;
  ChildStep failed_step = ChildStep::kSetUp;
  int failed_errno = 0;
};

// The kernel's struct sigaction for rt_sigaction (the same on x86-64 and arm64).
struct KernelSigaction {
  unsigned long handler;
  unsigned long flags;
  unsigned long restorer;
  uint64_t mask;
};
// SIG_DFL, no flags. A constant, not a local: the child may call no function, and a compiler
// fills a zeroed local with memset (an interceptor, under a sanitizer).
constexpr KernelSigaction kDefaultAction{0, 0, 0, 0};

// In the child: records the step and errno (-result) for the parent and exits 127.
[[noreturn]] DDPRUN_CHILD_CODE void FailChild(ChildSetup& setup, ChildStep step, long result) {
  setup.failed_step = step;
  setup.failed_errno = static_cast<int>(-result);
  setup.failed = true;
  ChildExit(127);
}

// In the child, between its start and exec (process_clone.h: raw system calls only, every
// signal blocked until just before exec).
DDPRUN_CHILD_CODE int ExecChild(void* argument) {
  ChildSetup& setup = *static_cast<ChildSetup*>(argument);
  long result;
  if (setup.controlling_terminal >= 0) {
    // A session of its own (its own process group too) whose controlling terminal is its stdout.
    if ((result = ChildSyscall(SYS_setsid)) < 0 ||
        (result = ChildSyscall(SYS_ioctl, setup.controlling_terminal, TIOCSCTTY, 0)) < 0) {
      FailChild(setup, ChildStep::kSetUp, result);
    }
  } else if ((result = ChildSyscall(SYS_setpgid, 0, 0)) < 0) {
    FailChild(setup, ChildStep::kSetUp, result);
  }
  if ((result = ChildSyscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL)) < 0) {
    FailChild(setup, ChildStep::kSetUp, result);
  }
  // The parent may have died before prctl took effect: then nobody would ever signal us.
  if (ChildSyscall(SYS_getppid) != setup.parent) ChildExit(127);
  const int standard_streams[3][2] = {{setup.stdin_fd, STDIN_FILENO},
                                      {setup.stdout_fd, STDOUT_FILENO},
                                      {setup.stderr_fd, STDERR_FILENO}};
  for (const auto& [from, to] : standard_streams) {
    // dup3 refuses a descriptor onto itself; then it only has to survive exec.
    result =
        from == to ? ChildSyscall(SYS_fcntl, to, F_SETFD, 0) : ChildSyscall(SYS_dup3, from, to, 0);
    if (result < 0) FailChild(setup, ChildStep::kSetUp, result);
  }
  // Its number is the parent's, above the standard streams (set up just before).
  if (setup.inherited_fd >= 0 &&
      (result = ChildSyscall(SYS_fcntl, setup.inherited_fd, F_SETFD, 0)) < 0) {
    FailChild(setup, ChildStep::kSetUp, result);
  }
  // Under Yama's ptrace_scope 1 only ancestors may attach; this names the parent, whose
  // descendants (a debugger it starts) then may too. EINVAL where Yama is not: nothing to do.
  if (setup.debuggable_by_parent) ChildSyscall(SYS_prctl, PR_SET_PTRACER, setup.parent);
  if (setup.working_dir != nullptr &&
      (result = ChildSyscall(SYS_chdir, reinterpret_cast<long>(setup.working_dir))) < 0) {
    FailChild(setup, ChildStep::kChangeDirectory, result);
  }
  if (setup.cpu_mask != nullptr) {
    // MPOL_PREFERRED: the node first, others when it is full. maxnode counts one more bit than
    // the mask holds, as the kernel (and numactl) expect.
    constexpr long kMpolPreferred = 1;
    result = ChildSyscall(SYS_sched_setaffinity, 0, setup.cpu_mask_bytes,
                          reinterpret_cast<long>(setup.cpu_mask));
    if (result >= 0) {
      result = ChildSyscall(SYS_set_mempolicy, kMpolPreferred,
                            reinterpret_cast<long>(setup.node_mask), setup.node_mask_bits + 1);
    }
    if (result < 0) FailChild(setup, ChildStep::kBind, result);
  }
  // Default dispositions before the signals are unblocked: a handler of the parent's must never
  // run in memory it shares, and "ignore" would survive exec (the agent ignores SIGPIPE).
  // SIGKILL and SIGSTOP refuse, harmlessly.
  for (long signal_number = 1; signal_number <= 64; ++signal_number) {
    ChildSyscall(SYS_rt_sigaction, signal_number, reinterpret_cast<long>(&kDefaultAction), 0,
                 sizeof(uint64_t));
  }
  const uint64_t empty = 0;
  ChildSyscall(SYS_rt_sigprocmask, SIG_SETMASK, reinterpret_cast<long>(&empty), 0, sizeof(empty));
  result = ChildSyscall(SYS_execve, reinterpret_cast<long>(setup.path),
                        reinterpret_cast<long>(setup.argv), reinterpret_cast<long>(setup.envp));
  FailChild(setup, ChildStep::kExec, result);
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
  switch (channel) {
    case OutputChannel::kTerminal:
      return OpenTerminal(ours, theirs, size);
    case OutputChannel::kThisProcessStderr:
      theirs.reset(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0));
      if (theirs.get() < 0) return ErrnoError("sharing this process's stderr", errno);
      return Status::Ok();
    case OutputChannel::kPipe:
      break;
  }
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

std::optional<TerminalSize> ParseTerminalSize(std::string_view text) {
  const size_t x = text.find('x');
  if (x == std::string_view::npos) return std::nullopt;
  auto rows = ParseInteger<unsigned short>(text.substr(0, x), 1, 10000);
  auto cols = ParseInteger<unsigned short>(text.substr(x + 1), 1, 10000);
  if (!rows || !cols) return std::nullopt;
  return TerminalSize{*rows, *cols};
}

Status ResizeTerminal(int master_fd, const TerminalSize& size) {
  if (size.rows == 0 || size.cols == 0) return Status::Ok();
  winsize window{size.rows, size.cols, 0, 0};
  if (::ioctl(master_fd, TIOCSWINSZ, &window) != 0) {
    return ErrnoError("setting a worker's terminal size", errno);
  }
  return Status::Ok();
}

namespace {

// One worker made ready to start: its request, descriptors, C strings and what its child reads.
struct PreparedWorker {
  SpawnRequest request;
  Status prepared;
  Fd out_ours, out_theirs, err_ours, err_theirs;
  Fd in_theirs, in_ours;  // the stdin it reads (when not inherited), and where input is written
  std::vector<char*> c_argv;
  std::vector<char*> c_envp;
  std::unique_ptr<BindingMasks> binding_masks;  // `setup` points into it
  ChildSetup setup;
  enum class Via {
    kExec,         // clone and exec (process_clone.h)
    kForker,       // asked of request.forker, which took it
    kExecInstead,  // asked of request.forker, which was gone by its answer
  };
  Via via = Via::kExec;
};

// Opens the worker's streams and fills its ChildSetup (everything the child needs is prepared
// before it starts: it may not allocate).
Status Prepare(PreparedWorker& worker) {
  const SpawnOptions& options = worker.request.options;
  if (worker.request.argv.empty()) return InvalidArgumentError("no worker program to start");
  RETURN_IF_ERROR(OpenOutput(options.stdout_channel, options.terminal_size, worker.out_ours,
                             worker.out_theirs));
  RETURN_IF_ERROR(OpenOutput(options.stderr_channel, options.terminal_size, worker.err_ours,
                             worker.err_theirs));
  const bool stdout_terminal = options.stdout_channel == OutputChannel::kTerminal;
  int stdin_fd = STDIN_FILENO;  // kInherited
  // Inheriting a stdin this process does not have (descriptor 0 closed) reads /dev/null.
  const bool no_stdin = ::fcntl(STDIN_FILENO, F_GETFD) < 0;
  switch (options.stdin_channel == InputChannel::kInherited && no_stdin ? InputChannel::kNull
                                                                        : options.stdin_channel) {
    case InputChannel::kNull:
      worker.in_theirs.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (worker.in_theirs.get() < 0) {
        return ErrnoError("opening /dev/null for a worker's stdin", errno);
      }
      stdin_fd = worker.in_theirs.get();
      break;
    case InputChannel::kInherited:
      break;
    case InputChannel::kForwarded:
      if (stdout_terminal) {
        worker.in_ours.reset(::fcntl(worker.out_ours.get(), F_DUPFD_CLOEXEC, 0));
        if (worker.in_ours.get() < 0) return ErrnoError("sharing a worker's terminal", errno);
        stdin_fd = worker.out_theirs.get();
      } else {
        RETURN_IF_ERROR(MakePipe(worker.in_theirs, worker.in_ours));
        stdin_fd = worker.in_theirs.get();
      }
      break;
  }
  worker.c_argv = CStrings(worker.request.argv);
  worker.c_envp = CStrings(worker.request.envp);
  ChildSetup& setup = worker.setup;
  setup.path = worker.c_argv[0];
  setup.argv = worker.c_argv.data();
  setup.envp = worker.c_envp.data();
  setup.parent = ::getpid();
  setup.stdin_fd = stdin_fd;
  setup.stdout_fd = worker.out_theirs.get();
  setup.stderr_fd = worker.err_theirs.get();
  setup.controlling_terminal = stdout_terminal ? worker.out_theirs.get() : -1;
  setup.working_dir = options.working_dir.empty() ? nullptr : options.working_dir.c_str();
  setup.inherited_fd = options.inherited_fd;
  setup.debuggable_by_parent = options.debuggable_by_parent;
  if (options.binding) {
    worker.binding_masks = std::make_unique<BindingMasks>(BindingMasks::Of(*options.binding));
    const BindingMasks& masks = *worker.binding_masks;
    setup.cpu_mask = masks.cpus.data();
    setup.cpu_mask_bytes = static_cast<long>(masks.cpus.size() * sizeof(unsigned long));
    setup.node_mask = masks.nodes.data();
    setup.node_mask_bits = static_cast<long>(masks.nodes.size() * 8 * sizeof(unsigned long));
  }
  return Status::Ok();
}

Status ChildFailure(const PreparedWorker& worker, ChildStep step, int error) {
  const std::string& program = worker.request.argv[0];
  switch (step) {
    case ChildStep::kSetUp:
      return ErrnoError("setting up the process for worker " + program, error);
    case ChildStep::kChangeDirectory:
      return ErrnoError("entering the working directory " + worker.request.options.working_dir +
                            " for " + program,
                        error);
    case ChildStep::kBind:
      return ErrnoError("binding worker " + program + " to " +
                            worker.request.options.binding->Describe() + " (--numa_binding)",
                        error);
    case ChildStep::kExec:
      break;
  }
  return ErrnoError("exec " + program, error);
}

ForkedStart ForkedStartOf(const PreparedWorker& worker) {
  const ChildSetup& setup = worker.setup;
  return {worker.request.argv,
          worker.request.envp,
          setup.stdin_fd,
          setup.stdout_fd,
          setup.stderr_fd,
          setup.controlling_terminal >= 0,
          setup.inherited_fd,
          worker.request.options.working_dir,
          setup.debuggable_by_parent,
          worker.request.options.binding};
}

// The worker's result: its ends of the streams, and a pidfd where the kernel gives one.
SpawnedWorker Started(PreparedWorker& worker, pid_t pid, int pidfd) {
  worker.out_theirs.reset();
  worker.err_theirs.reset();
  worker.in_theirs.reset();
  return SpawnedWorker{pid, worker.out_ours.release(), worker.err_ours.release(),
                       worker.in_ours.release(), pidfd};
}

// The result of a worker a forker started, or why it could not set it up.
Result<SpawnedWorker> FinishForked(PreparedWorker& worker, Result<pid_t> forked) {
  if (!forked.ok()) {
    return Status(forked.status().code(), "starting worker " + worker.request.argv[0] + " (" +
                                              forked.status().message() + ")");
  }
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, *forked, 0));
  if (pidfd >= 0) ::fcntl(pidfd, F_SETFD, FD_CLOEXEC);
  return Started(worker, *forked, pidfd);
}

// The worker's result once its child has exec'd or failed.
Result<SpawnedWorker> Finish(PreparedWorker& worker, Result<ClonedProcess> cloned) {
  const std::string& program = worker.request.argv[0];
  if (!cloned.ok()) {
    return Status(cloned.status().code(),
                  "starting worker " + program + ": " + cloned.status().message());
  }
  Fd pidfd(cloned->pidfd);
  const ChildSetup& setup = worker.setup;
  if (!setup.failed) return Started(worker, cloned->pid, pidfd.release());
  worker.out_theirs.reset();
  worker.err_theirs.reset();
  worker.in_theirs.reset();
  siginfo_t ignored;
  while (::waitid(P_PID, static_cast<id_t>(cloned->pid), &ignored, WEXITED) < 0 && errno == EINTR) {
  }
  return ChildFailure(worker, setup.failed_step, setup.failed_errno);
}

}  // namespace

struct WorkerSpawner::Impl {
  std::vector<std::unique_ptr<PreparedWorker>> workers;  // each stays where its child reads it
  CloneBatch children;
};

WorkerSpawner::WorkerSpawner() : impl_(std::make_unique<Impl>()) {}

// The children are waited for (CloneBatch) before their workers' memory goes.
WorkerSpawner::~WorkerSpawner() = default;

void WorkerSpawner::Add(SpawnRequest request) {
  auto& worker = *impl_->workers.emplace_back(std::make_unique<PreparedWorker>());
  worker.request = std::move(request);
  worker.prepared = Prepare(worker);
  if (!worker.prepared.ok()) return;
  if (worker.request.forker != nullptr && worker.request.forker->Send(ForkedStartOf(worker)).ok()) {
    worker.via = PreparedWorker::Via::kForker;
    return;
  }
  impl_->children.Start({ExecChild, &worker.setup, worker.request.options.cgroup_fd});
}

std::vector<Result<SpawnedWorker>> WorkerSpawner::Finish() {
  // The forkers' answers, in order; a worker whose forker is gone is started by exec instead.
  std::vector<Result<pid_t>> forked;
  CloneBatch execs_instead;
  for (const auto& worker : impl_->workers) {
    if (worker->via != PreparedWorker::Via::kForker) continue;
    Result<pid_t> answer = worker->request.forker->Collect();
    if (answer.status().code() == StatusCode::kUnavailable) {
      worker->via = PreparedWorker::Via::kExecInstead;
      execs_instead.Start({ExecChild, &worker->setup, worker->request.options.cgroup_fd});
    } else {
      forked.push_back(std::move(answer));
    }
  }
  // Returns once every child has exec'd, or has failed and exited.
  std::vector<Result<ClonedProcess>> cloned = impl_->children.Wait();
  std::vector<Result<ClonedProcess>> cloned_instead = execs_instead.Wait();
  std::vector<Result<SpawnedWorker>> results;
  results.reserve(impl_->workers.size());
  size_t next_cloned = 0, next_forked = 0, next_instead = 0;
  for (const auto& worker : impl_->workers) {
    if (!worker->prepared.ok()) {
      results.push_back(worker->prepared);
      continue;
    }
    switch (worker->via) {
      case PreparedWorker::Via::kExec:
        results.push_back(ddprun::Finish(*worker, std::move(cloned[next_cloned++])));
        break;
      case PreparedWorker::Via::kForker:
        results.push_back(FinishForked(*worker, std::move(forked[next_forked++])));
        break;
      case PreparedWorker::Via::kExecInstead:
        results.push_back(ddprun::Finish(*worker, std::move(cloned_instead[next_instead++])));
        break;
    }
  }
  return results;
}

Result<SpawnedWorker> SpawnWorker(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& envp,
                                  const SpawnOptions& options) {
  WorkerSpawner spawner;
  spawner.Add({argv, envp, options});
  return std::move(spawner.Finish().front());
}

}  // namespace ddprun
