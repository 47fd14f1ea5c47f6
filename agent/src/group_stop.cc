// GroupStop; see group_stop.h.
#include "group_stop.h"

#include <signal.h>

#include "ddprun/base/logging.h"
#include "ddprun/base/process_spawn.h"

namespace ddprun {

void GroupStop::Begin(int signal_number, AliveWorkers alive, Abandon abandon) {
  alive_ = std::move(alive);
  signal_sent_ = signal_number;
  SignalAlive(signal_number);
  timer_.expires_after(shutdown_timeout_);
  timer_.async_wait([this, abandon = std::move(abandon)](const boost::system::error_code& error) {
    if (error) return;
    const size_t running = alive_().size();
    if (running == 0) return;
    GetLogger("agent")->warn("{} worker(s) still running {} ms after {}; sending SIGKILL", running,
                             shutdown_timeout_.count(), SignalName(signal_sent_));
    SignalAlive(SIGKILL);
    timer_.expires_after(kill_timeout_);
    timer_.async_wait([this, abandon](const boost::system::error_code& kill_error) {
      if (kill_error) return;
      const std::vector<pid_t> survivors = alive_();
      if (survivors.empty()) return;
      for (pid_t pid : survivors) {
        GetLogger("agent")->error(
            "worker pid {} has not exited {} ms after SIGKILL (stuck in the kernel?); "
            "abandoning it",
            pid, kill_timeout_.count());
      }
      abandon(survivors);
    });
  });
}

void GroupStop::KillNow() { SignalAlive(SIGKILL); }

void GroupStop::SignalAlive(int signal_number) {
  if (!alive_) return;
  for (pid_t pid : alive_()) {
    // Each worker leads its own process group: the signal reaches what it started too.
    if (Status s = processes_.SignalGroup(pid, signal_number); !s.ok()) {
      GetLogger("agent")->error("worker pid {}: {}", pid, s.message());
    }
    // A stopped process (SIGSTOP, a debugger, Ctrl-Z) holds a catchable signal until continued:
    // SIGCONT after it, as systemd does, so a stopped worker ends within its grace too.
    if (signal_number == SIGKILL) continue;
    if (Status s = processes_.SignalGroup(pid, SIGCONT); !s.ok()) {
      GetLogger("agent")->error("worker pid {}: {}", pid, s.message());
    }
  }
}

}  // namespace ddprun
