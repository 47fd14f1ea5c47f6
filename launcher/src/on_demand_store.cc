// OnDemandStore; see on_demand_store.h.
#include "on_demand_store.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "ddprun/base/environment_map.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/timeline.h"
#include "ddprun/base/worker_failure.h"
#include "network_launcher.h"

namespace ddprun {

Result<std::unique_ptr<OnDemandStore>> OnDemandStore::Listen(boost::asio::io_context& io,
                                                             std::string token) {
  auto listener = BoundSocket::Bind("127.0.0.1", 0);
  if (!listener.ok()) {
    return Status(listener.status().code(), "the job's store: " + listener.status().message());
  }
  RETURN_IF_ERROR(listener->Listen());
  std::unique_ptr<OnDemandStore> store(
      new OnDemandStore(io, std::move(listener).value(), std::move(token)));
  store->WatchForFirstConnection();
  return store;
}

OnDemandStore::OnDemandStore(boost::asio::io_context& io, BoundSocket listener, std::string token)
    : listener_(std::move(listener)),
      port_(listener_->port()),
      watch_(io, listener_->fd()),
      token_(std::move(token)),
      helper_exit_(io) {}

OnDemandStore::~OnDemandStore() {
  StopWatching();
  StopHelper();
}

std::string OnDemandStore::address() const { return "127.0.0.1:" + std::to_string(port_); }

void OnDemandStore::WatchForFirstConnection() {
  watch_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& error) {
                      if (error) return;  // StopWatching: the run ended unused
                      StopWatching();
                      StartHelper();
                    });
}

void OnDemandStore::StopWatching() {
  // The descriptor is the listener's: released, never closed here.
  if (watch_.is_open()) watch_.release();
  boost::system::error_code ignored;
  helper_exit_.close(ignored);  // the helper's pidfd
}

void OnDemandStore::StartHelper() {
  EnvironmentMap environment = CurrentEnvironment();
  environment[kStoreTokenVariable] = token_;
  SpawnOptions options;
  options.stdout_channel = OutputChannel::kThisProcessStderr;
  options.stderr_channel = OutputChannel::kThisProcessStderr;
  options.inherited_fd = listener_->fd();
  // Found only now: a job that never uses the store does not look.
  auto spawned =
      SpawnWorker({NetworkLauncherPath(), kStoreHelperArgument, std::to_string(listener_->fd())},
                  ToEnvp(environment), options);
  if (!spawned.ok()) {
    // Refused at once rather than left waiting: the workers that use the store fail and say so.
    GetLogger("launcher")
        ->error("the job's store could not start ({}); the workers that use it will fail",
                spawned.status().message());
    listener_.reset();
    return;
  }
  timeline::Note("the store's helper started, pid", spawned->pid);
  helper_pid_ = spawned->pid;
  if (spawned->pidfd >= 0) {
    helper_exit_.assign(spawned->pidfd);
    WatchHelperExit();
  }
}

void OnDemandStore::WatchHelperExit() {
  helper_exit_.async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this](const boost::system::error_code& error) {
        if (error) return;  // the run is over, or Finish stops it
        int status = 0;
        while (::waitpid(helper_pid_, &status, 0) < 0 && errno == EINTR) {
        }
        GetLogger("launcher")
            ->warn(
                "the job's store (pid {}) ended during the run ({}); what it held is lost, and "
                "the next connection starts it again",
                helper_pid_, DescribeWaitStatus(status));
        helper_pid_ = -1;
        helper_exit_.close();
        if (!listener_) return;
        watch_.assign(listener_->fd());
        WatchForFirstConnection();
      });
}

void OnDemandStore::Finish(bool) {
  StopWatching();
  StopHelper();
}

void OnDemandStore::StopHelper() {
  if (helper_pid_ < 0) return;
  // The run is over: nothing the store holds is needed any more, so no grace is given.
  ::kill(helper_pid_, SIGKILL);
  while (::waitpid(helper_pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  helper_pid_ = -1;
}

std::vector<pid_t> OnDemandStore::Children() const {
  if (helper_pid_ < 0) return {};
  return {helper_pid_};
}

}  // namespace ddprun
