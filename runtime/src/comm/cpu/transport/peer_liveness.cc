// PeerLiveness; see peer_liveness.h.
#include "transport/peer_liveness.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"

namespace ddp::cpu {

PeerLiveness::PeerLiveness(pid_t pid, std::string peer, bool try_pidfd)
    : pid_(pid), peer_(std::move(peer)) {
  if (!try_pidfd) return;
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd_ < 0) {
    ddprun::GetLogger("runtime")->info(
        "{}; watching it through /proc instead",
        ddprun::ErrnoError("pidfd_open of " + peer_ + " (pid " + std::to_string(pid_) + ")", errno)
            .message());
  }
}

PeerLiveness::~PeerLiveness() {
  if (pidfd_ >= 0) ::close(pidfd_);
}

ddprun::Status PeerLiveness::Check() const { return pidfd_ >= 0 ? CheckPidfd() : CheckProc(); }

ddprun::Status PeerLiveness::CheckPidfd() const {
  pollfd entry{pidfd_, POLLIN, 0};
  int ready;
  do {
    ready = ::poll(&entry, 1, 0);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return ddprun::ErrnoError("polling the pidfd of " + peer_, errno);
  if (ready > 0) return ddprun::UnavailableError(peer_ + " exited (shared-memory link)");
  return ddprun::Status::Ok();
}

ddprun::Status PeerLiveness::CheckProc() const {
  const std::string path = "/proc/" + std::to_string(pid_) + "/stat";
  auto stat = ddprun::ReadFileHead(path, 4096);
  if (stat.ok()) {
    // "pid (comm) S ...": the state follows the last ')', since comm may hold anything.
    const size_t paren = stat->rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat->size()) {
      return ddprun::InternalError("cannot read the state of " + peer_ + " in " + path);
    }
    const char state = (*stat)[paren + 2];
    if (state == 'Z' || state == 'X') {
      return ddprun::UnavailableError(peer_ + " exited (shared-memory link)");
    }
    return ddprun::Status::Ok();
  }
  if (stat.status().code() == ddprun::StatusCode::kNotFound) {
    return ddprun::UnavailableError(peer_ + " exited (shared-memory link)");
  }
  // No /proc to read: whether the pid exists at all (EPERM: it does, owned by someone else).
  if (::kill(pid_, 0) == 0 || errno == EPERM) return ddprun::Status::Ok();
  if (errno == ESRCH) return ddprun::UnavailableError(peer_ + " exited (shared-memory link)");
  return ddprun::ErrnoError("checking whether " + peer_ + " runs", errno);
}

}  // namespace ddp::cpu
