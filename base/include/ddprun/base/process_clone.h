// CloneBatch: starts processes the way posix_spawn does, without copying this one, and many at
// once. Each child shares this process's memory and runs a function on a stack of its own
// until it calls execve or exits. No page tables are copied and nothing is copied on write
// afterwards, so a child costs the same in a large multi-threaded agent as in a small program;
// and the children of one batch run side by side (where the architecture allows, see below), so
// a group of workers starts as fast as the machine's cores exec them. Where a cgroup is given,
// a child is created in it (clone3's CLONE_INTO_CGROUP): no migration, whose cost (an RCU grace
// period, often milliseconds) was most of a launch's time.
//
// The entry function runs in the child with every signal blocked (so no handler of this process
// runs in it) and must be written as for vfork: raw system calls only (ChildSyscall), no
// allocation, no locks, no libc function (they keep state, errno among it), no sanitizer
// instrumentation (DDPRUN_CHILD_CODE); it must end in execve or ChildExit. What it tells the
// parent it writes into memory its argument points to, which the parent reads once
// CloneBatch::Wait has returned.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "ddprun/base/status.h"

// For the entry function and everything it calls: no sanitizer may instrument code that runs
// on the child's stack in memory it shares with its parent (their bookkeeping, such as
// ThreadSanitizer's shadow stack of the parent's thread, would be changed by a process that
// never returns).
#if defined(__clang__)
#define DDPRUN_CHILD_CODE \
  __attribute__((disable_sanitizer_instrumentation, no_sanitize("address", "thread", "undefined")))
#else
#define DDPRUN_CHILD_CODE                                                                 \
  __attribute__((no_sanitize("address"), no_sanitize("thread"), no_sanitize("undefined"), \
                 no_stack_protector))
#endif

namespace ddprun {

// Runs in the child. Its return value, should it return, is the child's exit status.
using ChildEntry = int (*)(void* argument);

struct CloneRequest {
  ChildEntry entry = nullptr;
  void* argument = nullptr;
  // >= 0: a directory descriptor (O_PATH will do) of the cgroup v2 the child is created in.
  int cgroup_fd = -1;
};

struct ClonedProcess {
  pid_t pid = -1;
  // A pidfd of the child (close-on-exec, owned by the caller), or -1 where the kernel gives none.
  int pidfd = -1;
};

// Starts children and waits for their exec: each Start begins a child at once (where the
// architecture allows, it runs beside the caller, which goes on to start the next), Wait returns
// once every child has called execve successfully or exited (then it is a zombie the caller
// reaps). Each child is a child of this process whose exit sends SIGCHLD, and its parent-death
// signal follows the thread that started it. Use from one thread; the destructor waits as Wait
// does, for until then the children may still read what their arguments point to.
class CloneBatch {
 public:
  CloneBatch();
  ~CloneBatch();
  CloneBatch(const CloneBatch&) = delete;
  CloneBatch& operator=(const CloneBatch&) = delete;

  // Starts `request.entry(request.argument)` in a new process. What the argument points to must
  // stay valid, and unchanged, until Wait returns.
  void Start(const CloneRequest& request);
  // The children's results, in the order they were started, once each has exec'd or exited.
  // Errors: UNIMPLEMENTED where a cgroup was asked for and the kernel cannot create a process in
  // one (clone3 with CLONE_INTO_CGROUP needs Linux 5.7; a container's seccomp filter may hide
  // clone3), else INTERNAL with the system's reason. Call once.
  std::vector<Result<ClonedProcess>> Wait();

  struct Child;  // one child's stack and exec word (process_clone.cc)

 private:
  std::vector<std::unique_ptr<Child>> children_;  // each stays where its child reads it
  bool waited_ = false;
};

// Starts `request.entry(request.argument)` in a child that lives beside this process and never
// execs, and returns at once: a helper that must outlive a SIGKILL of this process, or a child
// whose only purpose is to have been created (in a cgroup). Where the architecture allows it
// shares this process's memory, so it costs no copy of it to start or to end (and, should this
// process die, keeps that memory alone); elsewhere it runs in a forked copy. The same rules hold
// for its code as for an entry function, every signal stays blocked in it for all its life, and
// `stack` (`stack_bytes`) and whatever the argument points to must stay allocated until it has
// been reaped. Its exit sends SIGCHLD. Errors: as CloneBatch::Wait's.
Result<ClonedProcess> StartResidentChild(const CloneRequest& request, std::byte* stack,
                                         size_t stack_bytes);

// A system call from the entry function: its result, or -errno (never through errno, which the
// child shares with the thread that started it).
DDPRUN_CHILD_CODE long ChildSyscall(long number, long a = 0, long b = 0, long c = 0, long d = 0);

// Ends the child at once with `status`.
[[noreturn]] DDPRUN_CHILD_CODE void ChildExit(int status);

}  // namespace ddprun
