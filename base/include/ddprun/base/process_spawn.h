// SpawnWorker: the system calls that start one worker. The child runs in its own process group
// (so a signal reaches everything it started), dies with SIGKILL when the thread that spawned it
// exits (parent-death signal: call it from the thread that lives as long as the agent), starts
// with an empty signal mask and default dispositions, and writes into two pipes or
// pseudo-terminals whose other ends the caller gets. Where a cgroup is given it starts in it.
// The child shares this process's memory until its exec (process_clone.h), so starting one
// costs the same in a large agent as in a small program; the call returns once it has exec'd.
//
// A worker given a terminal runs in a session of its own with its stdout terminal as controlling
// terminal (so it gets SIGWINCH, and /dev/tty works), in raw output mode (a '\n' stays a '\n':
// logs hold what the program wrote) and without echo (the user's own terminal echoes what they
// type).
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/cpu_binding.h"
#include "ddprun/base/status.h"
#include "ddprun/base/worker_failure.h"  // SignalName

namespace ddprun {

struct SpawnedWorker {
  pid_t pid = -1;      // also the process group id
  int stdout_fd = -1;  // the pipe's read end or the terminal's master; close-on-exec, owned
  int stderr_fd = -1;  // the same for stderr
  // InputChannel::kForwarded: where the worker's input is written (the pipe's write end, or the
  // stdout terminal's master once more); -1 otherwise. Close-on-exec, owned.
  int stdin_fd = -1;
  // A pidfd of the worker (readable once it exited), or -1 where the kernel gives none.
  // Close-on-exec, owned.
  int pidfd = -1;
};

enum class OutputChannel {
  kPipe,
  kTerminal,
  kThisProcessStderr,  // this process's own stderr (SpawnedWorker's fd is then -1)
};

enum class InputChannel {
  kNull,       // /dev/null
  kInherited,  // this process's own stdin (a file, or every worker reading the same input)
  kForwarded,  // SpawnedWorker::stdin_fd; with a stdout terminal, that terminal
};

// A terminal's size; 0 x 0 leaves the kernel's default.
struct TerminalSize {
  unsigned short rows = 0;
  unsigned short cols = 0;
};

struct SpawnOptions {
  OutputChannel stdout_channel = OutputChannel::kPipe;
  OutputChannel stderr_channel = OutputChannel::kPipe;
  InputChannel stdin_channel = InputChannel::kNull;
  TerminalSize terminal_size;  // of the worker's terminals
  // When >= 0: a descriptor of the cgroup the worker starts in (JobCgroup::dir_fd).
  int cgroup_fd = -1;
  // When not empty: the directory the program starts in (else this process's).
  std::string working_dir;
  // When >= 3: a descriptor the worker keeps open, at the same number (the progress page).
  int inherited_fd = -1;
  // Lets this process's descendants (a debugger collecting stacks) attach to the worker where
  // the kernel allows only ancestors to (Yama ptrace_scope 1).
  bool debuggable_by_parent = false;
  // When set: the CPUs the worker runs on and the memory node it prefers, set before exec
  // (--numa_binding, numa_binding.h).
  std::optional<WorkerBinding> binding;
};

// Sets the size of a terminal whose master is `master_fd` (its session gets SIGWINCH).
Status ResizeTerminal(int master_fd, const TerminalSize& size);
// The size of the terminal `fd` is; 0 x 0 when it is none.
TerminalSize TerminalSizeOf(int fd);
// "ROWSxCOLS" (each 1 to 10000) as a size; nullopt for anything else.
std::optional<TerminalSize> ParseTerminalSize(std::string_view text);

// Starts argv[0] (a path: no PATH search) with exactly `envp` as its environment.
// On failure no process is left running and no descriptor is leaked; the error names the
// program and the reason (for example "exec ./train: Permission denied").
Result<SpawnedWorker> SpawnWorker(const std::vector<std::string>& argv,
                                  const std::vector<std::string>& envp,
                                  const SpawnOptions& options = {});

// What a worker's child would be given between its start and exec: a WorkerForker sets up a
// worker it forks the same way.
struct ForkedStart {
  const std::vector<std::string>& argv;
  const std::vector<std::string>& envp;
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  bool terminal_session;  // a session of its own, its stdout terminal as controlling terminal
  int inherited_fd;       // -1: none
  const std::string& working_dir;
  bool debuggable_by_parent;
  const std::optional<WorkerBinding>& binding;
};

// A process that starts workers as forks of itself (python_preload.h) instead of by exec. Each
// worker it starts is this process's child (reaped by waitpid like any other), in its own
// process group, with the parent-death signal of a worker started by exec.
class WorkerForker {
 public:
  virtual ~WorkerForker() = default;
  // Asks for one worker; its answer comes from Collect, in the order of the sends. An error
  // when the forker cannot take it (then it is started by exec).
  virtual Status Send(const ForkedStart& start) = 0;
  // The pid of the next worker asked for. UNAVAILABLE when the forker is gone (the worker is
  // then started by exec); another error when the worker could not be set up (a working
  // directory that does not exist: it exited, and was reaped).
  virtual Result<pid_t> Collect() = 0;
};

struct SpawnRequest {
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  SpawnOptions options;
  // When set: the worker is asked of it, and started by exec only when it is gone.
  WorkerForker* forker = nullptr;
};

// SpawnWorker for many workers at once: Add makes one worker ready and starts it (it execs while
// the caller goes on to the next), Finish waits for every exec and returns one result per Add,
// in order; one failing keeps no other from starting. Use from the one thread the workers'
// parent-death signal is to follow. Destroyed without Finish, it still waits for the execs and
// closes what it opened.
class WorkerSpawner {
 public:
  WorkerSpawner();
  ~WorkerSpawner();
  WorkerSpawner(const WorkerSpawner&) = delete;
  WorkerSpawner& operator=(const WorkerSpawner&) = delete;

  void Add(SpawnRequest request);
  // Call once.
  std::vector<Result<SpawnedWorker>> Finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun
