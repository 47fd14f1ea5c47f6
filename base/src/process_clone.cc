// CloneBatch; see process_clone.h.
//
// clone3 has no libc wrapper, and a child that shares memory cannot return from the system call
// into C++ on its new stack: the few instructions of ddprun_start_on_new_stack (below) make the
// call and, in the child, call the entry function. Where that stub is not written for the
// architecture, or the kernel (or a seccomp filter) has no clone3, glibc's clone() starts each
// child with vfork's contract instead (one after another, no cgroup to start in).
#include "ddprun/base/process_clone.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>

namespace ddprun {
namespace {

// The kernel's struct clone_args (include/uapi/linux/sched.h), through `cgroup` (Linux 5.7).
struct CloneArgs {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
  uint64_t set_tid;
  uint64_t set_tid_size;
  uint64_t cgroup;
};
constexpr uint64_t kCloneIntoCgroup = 0x200000000ULL;  // CLONE_INTO_CGROUP
constexpr int kClonePidfd = 0x00001000;                // CLONE_PIDFD

// Enough for the entry functions of this project (a few frames of raw system calls).
constexpr size_t kChildStackBytes = 32 * 1024;

#if defined(__x86_64__) || defined(__aarch64__)
#define DDPRUN_HAVE_CLONE3_STUB 1
#endif

}  // namespace
}  // namespace ddprun

#ifdef DDPRUN_HAVE_CLONE3_STUB
// long ddprun_start_on_new_stack(CloneArgs* args, size_t size, ChildEntry entry, void* argument):
// clone3(args, size). The parent gets its result (the pid, or -errno). The child starts on
// args->stack with every register as the parent had it, so the entry and its argument are kept
// in registers the system call preserves; it calls entry(argument) and exits with its result.
extern "C" long ddprun_start_on_new_stack(ddprun::CloneArgs* args, size_t size,
                                          ddprun::ChildEntry entry, void* argument);
#if defined(__x86_64__)
asm(R"(
  .text
  .p2align 4
  .globl ddprun_start_on_new_stack
  .hidden ddprun_start_on_new_stack
  .type ddprun_start_on_new_stack, @function
ddprun_start_on_new_stack:
  .cfi_startproc
  endbr64
  mov %rdx, %r8
  mov %rcx, %r9
  mov $435, %eax
  syscall
  test %rax, %rax
  jz 1f
  ret
1:
  .cfi_undefined rip
  xor %ebp, %ebp
  mov %r9, %rdi
  call *%r8
  mov %eax, %edi
  mov $231, %eax
  syscall
  hlt
  .cfi_endproc
  .size ddprun_start_on_new_stack, .-ddprun_start_on_new_stack
)");
#elif defined(__aarch64__)
asm(R"(
  .text
  .p2align 4
  .globl ddprun_start_on_new_stack
  .hidden ddprun_start_on_new_stack
  .type ddprun_start_on_new_stack, %function
ddprun_start_on_new_stack:
  .cfi_startproc
  hint #34
  mov x9, x2
  mov x10, x3
  mov x8, #435
  svc #0
  cbz x0, 1f
  ret
1:
  .cfi_undefined x30
  mov x29, #0
  mov x30, #0
  mov x0, x10
  blr x9
  mov x8, #94
  svc #0
  brk #0
  .cfi_endproc
  .size ddprun_start_on_new_stack, .-ddprun_start_on_new_stack
)");
#endif
#endif

namespace ddprun {

// One child being started: its stack, and the word the kernel zeroes (and wakes a futex on)
// when the child execs or exits, as it does for a thread's CLONE_CHILD_CLEARTID: until then the
// stack, and whatever the entry reads, must stay as they are.
struct CloneBatch::Child {
  // Not zeroed, and never touched by this process: the child's alone until it execs or exits.
  std::unique_ptr<std::byte[]> stack{new std::byte[kChildStackBytes]};
  std::atomic<int32_t> before_exec{1};
  int pidfd = -1;
  long started = -ENOSYS;  // the pid, or -errno (-ENOTSUP: no cgroup to start in)
};

namespace {

using Child = CloneBatch::Child;

// Blocks every signal of the calling thread, libc's own included, until destroyed: no handler
// of this process may run in a child that shares its memory. Raw system calls, as libc's
// sigprocmask refuses to block the signals it uses itself.
class AllSignalsBlocked {
 public:
  AllSignalsBlocked() {
    const uint64_t all = ~uint64_t{0};
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &saved_, sizeof(saved_));
  }
  ~AllSignalsBlocked() {
    ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &saved_, nullptr, sizeof(saved_));
  }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  uint64_t saved_ = 0;
};

// clone3 with the child running beside this thread: its pid, or -errno (-ENOSYS where the stub
// is not written for this architecture).
long StartBesideParent(const CloneRequest& request, Child& child) {
#ifdef DDPRUN_HAVE_CLONE3_STUB
  CloneArgs args{};
  args.flags = CLONE_VM | CLONE_CHILD_CLEARTID | kClonePidfd;
  args.pidfd = reinterpret_cast<uintptr_t>(&child.pidfd);
  args.child_tid = reinterpret_cast<uintptr_t>(&child.before_exec);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<uintptr_t>(child.stack.get());
  args.stack_size = kChildStackBytes;
  if (request.cgroup_fd >= 0) {
    args.flags |= kCloneIntoCgroup;
    args.cgroup = static_cast<uint64_t>(request.cgroup_fd);
  }
  return ddprun_start_on_new_stack(&args, sizeof(args), request.entry, request.argument);
#else
  (void)request;
  (void)child;
  return -ENOSYS;
#endif
}

// glibc's clone(), with vfork's contract (this thread waits for the child's exec): where clone3
// cannot be used. A pidfd where the kernel has them (5.2). Its pid, or -errno.
long StartSuspendingParent(const CloneRequest& request, Child& child) {
  std::byte* const stack_top = child.stack.get() + kChildStackBytes;
  long result = ::clone(request.entry, stack_top, CLONE_VM | CLONE_VFORK | kClonePidfd | SIGCHLD,
                        request.argument, &child.pidfd);
  if (result < 0 && errno == EINVAL) {
    child.pidfd = -1;
    result = ::clone(request.entry, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, request.argument);
  }
  return result < 0 ? -errno : result;
}

// What Wait returns for a child whose start gave `started`.
Result<ClonedProcess> Started(long started, int pidfd) {
  if (started == -ENOTSUP) {
    return Status(StatusCode::kUnimplemented,
                  "this system cannot start a process in a cgroup (clone3 with CLONE_INTO_CGROUP "
                  "needs Linux 5.7, and no seccomp filter hiding clone3)");
  }
  if (started < 0) return ErrnoError("starting a process (clone)", static_cast<int>(-started));
  return ClonedProcess{static_cast<pid_t>(started), pidfd};
}

}  // namespace

#if defined(__x86_64__)
DDPRUN_CHILD_CODE long ChildSyscall(long number, long a, long b, long c, long d) {
  register long r10 asm("r10") = d;
  long result;
  asm volatile("syscall"
               : "=a"(result)
               : "a"(number), "D"(a), "S"(b), "d"(c), "r"(r10)
               : "rcx", "r11", "memory");
  return result;
}
#elif defined(__aarch64__)
DDPRUN_CHILD_CODE long ChildSyscall(long number, long a, long b, long c, long d) {
  register long x8 asm("x8") = number;
  register long x0 asm("x0") = a;
  register long x1 asm("x1") = b;
  register long x2 asm("x2") = c;
  register long x3 asm("x3") = d;
  asm volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  return x0;
}
#else
// Through libc, which sets errno: only children that suspend their parent (vfork's contract)
// run here, so no thread reads errno meanwhile.
DDPRUN_CHILD_CODE long ChildSyscall(long number, long a, long b, long c, long d) {
  const long result = ::syscall(number, a, b, c, d);
  return result == -1 ? -errno : result;
}
#endif

[[noreturn]] DDPRUN_CHILD_CODE void ChildExit(int status) {
  for (;;) ChildSyscall(SYS_exit_group, status);
}

Result<ClonedProcess> StartResidentChild(const CloneRequest& request, std::byte* stack,
                                         size_t stack_bytes) {
  const AllSignalsBlocked blocked;  // and so they stay in the child
  ClonedProcess child;
  long result = -ENOSYS;
#ifdef DDPRUN_HAVE_CLONE3_STUB
  CloneArgs args{};
  args.flags = CLONE_VM | kClonePidfd;
  args.pidfd = reinterpret_cast<uintptr_t>(&child.pidfd);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<uintptr_t>(stack);
  args.stack_size = stack_bytes;
  if (request.cgroup_fd >= 0) {
    args.flags |= kCloneIntoCgroup;
    args.cgroup = static_cast<uint64_t>(request.cgroup_fd);
  }
  result = ddprun_start_on_new_stack(&args, sizeof(args), request.entry, request.argument);
#else
  (void)stack;
  (void)stack_bytes;
#endif
  if (request.cgroup_fd >= 0 && (result == -ENOSYS || result == -EINVAL || result == -E2BIG)) {
    return Started(-ENOTSUP, -1);
  }
  if (result == -ENOSYS) {
    child.pidfd = -1;
    result = ::fork();
    if (result == 0) ChildExit(request.entry(request.argument));
    if (result < 0) result = -errno;
  }
  return Started(result, child.pidfd);
}

CloneBatch::CloneBatch() = default;

void CloneBatch::Start(const CloneRequest& request) {
  Child& child = *children_.emplace_back(std::make_unique<Child>());
  const AllSignalsBlocked blocked;  // the child starts with it too, and unblocks it itself
  long result = StartBesideParent(request, child);
  const bool no_clone3 = result == -ENOSYS;
  const bool no_cgroup_clone =
      request.cgroup_fd >= 0 && (no_clone3 || result == -EINVAL || result == -E2BIG);
  if (result < 0) child.before_exec.store(0);  // nothing runs: nothing to wait for
  if (no_clone3 && !no_cgroup_clone) result = StartSuspendingParent(request, child);
  child.started = no_cgroup_clone ? -ENOTSUP : result;
}

std::vector<Result<ClonedProcess>> CloneBatch::Wait() {
  waited_ = true;
  std::vector<Result<ClonedProcess>> results;
  results.reserve(children_.size());
  for (const auto& each : children_) {
    Child& child = *each;
    int32_t value;
    while ((value = child.before_exec.load(std::memory_order_acquire)) != 0) {
      ::syscall(SYS_futex, &child.before_exec, FUTEX_WAIT, value, nullptr, nullptr, 0);
    }
    results.push_back(Started(child.started, child.pidfd));
  }
  return results;
}

CloneBatch::~CloneBatch() {
  if (waited_) return;
  for (auto& result : Wait()) {
    if (result.ok() && result->pidfd >= 0) ::close(result->pidfd);
  }
}

}  // namespace ddprun
