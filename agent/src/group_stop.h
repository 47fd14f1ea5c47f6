// GroupStop: stopping a worker group within bounds. A signal (SIGTERM, or the one the agent was
// sent) to each live worker's process group, with SIGCONT so that a stopped worker gets it; SIGKILL
// to those still alive shutdown_timeout later; kill_timeout after that, the survivors (stuck in the
// kernel) are given up on with an error in the log. Every wait is bounded, whatever the workers do.
//
// The supervisor owns the workers and tells GroupStop, through `alive`, which still run; it
// reaps them itself and calls Cancel once none is left. Runs on the supervisor's io_context;
// not thread-safe.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <vector>

#include "ddprun/agent/worker_processes.h"

namespace ddprun {

class GroupStop {
 public:
  // The process group ids of the workers that still run.
  using AliveWorkers = std::function<std::vector<pid_t>()>;
  // Called once with the workers still alive kill_timeout after SIGKILL; they count as gone.
  using Abandon = std::function<void(const std::vector<pid_t>& survivors)>;

  // Signals go through `processes`, which outlives this.
  GroupStop(boost::asio::io_context& io, WorkerProcesses& processes,
            std::chrono::milliseconds shutdown_timeout, std::chrono::milliseconds kill_timeout)
      : timer_(io),
        processes_(processes),
        shutdown_timeout_(shutdown_timeout),
        kill_timeout_(kill_timeout) {}

  // Sends `signal_number` to every live worker's process group now and arms the SIGKILL and
  // abandon deadlines. A Begin while a stop runs starts over with the new signal.
  void Begin(int signal_number, AliveWorkers alive, Abandon abandon);
  // SIGKILL to every live worker now (a second stop signal); the deadlines stay.
  void KillNow();
  // Disarms the deadlines: every worker has been reaped.
  void Cancel() { timer_.cancel(); }
  // The signal the current (or last) stop sent first.
  int signal_sent() const { return signal_sent_; }

 private:
  void SignalAlive(int signal_number);

  boost::asio::steady_timer timer_;
  WorkerProcesses& processes_;
  const std::chrono::milliseconds shutdown_timeout_;
  const std::chrono::milliseconds kill_timeout_;
  AliveWorkers alive_;
  int signal_sent_ = 0;
};

}  // namespace ddprun
