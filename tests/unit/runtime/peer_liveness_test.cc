// A shared-memory peer's liveness: seen through a pidfd, and through /proc where no pidfd can be
// had; never "alive" for want of a way to look.
#include "transport/peer_liveness.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

using ddp::cpu::PeerLiveness;

namespace {

// A child that waits for a signal; killed and left unreaped (a zombie) by Kill.
struct Child {
  pid_t pid = ::fork();
  Child() {
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  void Kill() {
    REQUIRE(::kill(pid, SIGKILL) == 0);
    siginfo_t info{};
    REQUIRE(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) == 0);
  }
  ~Child() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

}  // namespace

TEST_CASE("a peer that exits is seen to have exited, with a pidfd and without one") {
  for (const bool try_pidfd : {true, false}) {
    INFO((try_pidfd ? "pidfd" : "/proc fallback"));
    Child child;
    PeerLiveness peer(child.pid, "rank 1", try_pidfd);
    CHECK(peer.uses_pidfd() == try_pidfd);
    CHECK(peer.Check().ok());
    child.Kill();  // a zombie now: exited, not yet reaped
    const ddprun::Status after = peer.Check();
    CHECK(after.code() == ddprun::StatusCode::kUnavailable);
    CHECK(after.message() == "rank 1 exited (shared-memory link)");
  }
}

TEST_CASE("without a pidfd, a peer that is gone altogether has exited") {
  pid_t gone;
  {
    Child child;
    gone = child.pid;
  }  // killed and reaped
  PeerLiveness peer(gone, "rank 2", /*try_pidfd=*/false);
  CHECK(peer.Check().code() == ddprun::StatusCode::kUnavailable);
}
