// GroupStop over real processes: the signal first, SIGKILL after the grace period to a worker
// that ignores it, and survivors given up on after the kill timeout, so no wait is unbounded.
#include "group_stop.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <map>

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

// A child in its own process group (as workers are) that runs /bin/sh -c `script`, and has
// printed its first line (the script says when it is ready) by the time this returns.
pid_t StartChild(const char* script) {
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::dup2(ready[1], STDOUT_FILENO);
    ::execl("/bin/sh", "sh", "-c", script, static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(ready[1]);
  pollfd line{ready[0], POLLIN, 0};
  REQUIRE(::poll(&line, 1, 10'000) == 1);
  ::close(ready[0]);
  return pid;
}

// The children not reaped yet; reaps those that have exited and records how.
struct Children {
  std::map<pid_t, int> running;  // pid -> 0
  std::map<pid_t, int> ended;    // pid -> wait status
  std::vector<pid_t> Alive() {
    std::vector<pid_t> alive;
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      if (::waitpid(it->first, &status, WNOHANG) == it->first) {
        ended[it->first] = status;
        it = running.erase(it);
      } else {
        alive.push_back(it->first);
        ++it;
      }
    }
    return alive;
  }
};

// Runs `io` until `done` or 20 s pass, checking every 10 ms (the test's own loop, not the
// object under test's); then stops it, whatever deadlines are still armed.
void RunUntil(boost::asio::io_context& io, const std::function<bool()>& done) {
  boost::asio::steady_timer tick(io);
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  std::function<void()> check = [&] {
    if (done() || std::chrono::steady_clock::now() > deadline) return io.stop();
    tick.expires_after(10ms);
    tick.async_wait([&](const boost::system::error_code&) { check(); });
  };
  check();
  io.run();
}

}  // namespace

TEST_CASE("a group stop sends the signal, then SIGKILL to a worker that ignores it") {
  Children children;
  children.running[StartChild("trap '' TERM; echo ready; while :; do sleep 1; done")] = 0;
  children.running[StartChild("echo ready; sleep 30")] = 0;
  boost::asio::io_context io;
  GroupStop stop(io, SystemWorkerProcesses(), 300ms, 5s);
  bool abandoned = false;
  stop.Begin(
      SIGTERM, [&] { return children.Alive(); },
      [&](const std::vector<pid_t>&) { abandoned = true; });
  RunUntil(io, [&] { return children.Alive().empty(); });
  stop.Cancel();
  REQUIRE(children.ended.size() == 2);
  CHECK_FALSE(abandoned);
  std::vector<int> signals;
  for (const auto& [pid, status] : children.ended) {
    REQUIRE(WIFSIGNALED(status));
    signals.push_back(WTERMSIG(status));
  }
  std::sort(signals.begin(), signals.end());
  CHECK(signals == std::vector<int>{SIGKILL, SIGTERM});
  CHECK(stop.signal_sent() == SIGTERM);
}

TEST_CASE("a stopped worker gets the signal at once, not SIGKILL after the grace period") {
  Children children;
  // exec: a shell waiting in vfork for its child cannot stop until the child has exec'd.
  const pid_t stopped = StartChild("echo ready; exec sleep 30");
  children.running[stopped] = 0;
  // Should the stop fail, the stopped group must not outlive the test.
  struct KillOnExit {
    Children& children;
    pid_t pid;
    ~KillOnExit() {
      if (children.running.count(pid) == 0) return;  // reaped: the pid may be another's now
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } kill_on_exit{children, stopped};
  REQUIRE(::kill(-stopped, SIGSTOP) == 0);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(stopped), &info, WSTOPPED | WNOWAIT) == 0);
  boost::asio::io_context io;
  GroupStop stop(io, SystemWorkerProcesses(), 30s,
                 5s);  // a grace far beyond the test's own 20 s bound
  stop.Begin(
      SIGTERM, [&] { return children.Alive(); }, [](const std::vector<pid_t>&) {});
  RunUntil(io, [&] { return children.Alive().empty(); });
  stop.Cancel();
  REQUIRE(children.ended.count(stopped) == 1);
  const int status = children.ended[stopped];
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGTERM);
}

TEST_CASE(
    "a worker still there after SIGKILL and the kill timeout is given up on, not waited for") {
  // A process the supervisor believes alive though it cannot end (here: an exited child nobody
  // reaps, which signals do not remove).
  const pid_t zombie = StartChild("echo ready");
  boost::asio::io_context io;
  GroupStop stop(io, SystemWorkerProcesses(), 50ms, 100ms);
  std::vector<pid_t> abandoned;
  stop.Begin(
      SIGTERM,
      [&] { return abandoned.empty() ? std::vector<pid_t>{zombie} : std::vector<pid_t>{}; },
      [&](const std::vector<pid_t>& survivors) { abandoned = survivors; });
  io.run();  // returns once the abandon deadline has fired: nothing else is pending
  CHECK(abandoned == std::vector<pid_t>{zombie});
  int status = 0;
  CHECK(::waitpid(zombie, &status, 0) == zombie);
}
