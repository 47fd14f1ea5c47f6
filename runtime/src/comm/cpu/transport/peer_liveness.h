// PeerLiveness: whether the process at the other end of a shared-memory link still runs,
// checked without blocking between waits. Through a pidfd (readable once the process has
// exited, even before it is reaped) when pidfd_open works; otherwise (an old kernel, a seccomp
// filter) through /proc/<pid>/stat, where a process that is gone or a zombie has exited. It never
// answers "alive" for want of a way to look. Thread-compatible: Check may be called from any
// one thread at a time.
#pragma once

#include <sys/types.h>

#include <string>

#include "ddprun/base/status.h"

namespace ddp::cpu {

class PeerLiveness {
 public:
  // Watches `pid`, named `peer` in errors; `try_pidfd` false goes straight to the fallback (for
  // tests).
  PeerLiveness(pid_t pid, std::string peer, bool try_pidfd = true);
  ~PeerLiveness();
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;

  // OK while the peer runs; UNAVAILABLE, naming it, once it has exited; another error when
  // neither way of looking works.
  ddprun::Status Check() const;

  bool uses_pidfd() const { return pidfd_ >= 0; }

 private:
  ddprun::Status CheckPidfd() const;
  ddprun::Status CheckProc() const;

  const pid_t pid_;
  const std::string peer_;
  int pidfd_ = -1;
};

}  // namespace ddp::cpu
