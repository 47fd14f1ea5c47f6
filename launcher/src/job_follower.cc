// FollowJob and CancelJob; see job_follower.h.
#include "job_follower.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "ddprun/base/thread_annotations.h"

namespace ddprun {
namespace {

sigset_t StopSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int signal_number : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, signal_number);
  return set;
}

// The stop signals, blocked in this thread (and so in the threads it starts) while alive, and
// read through a signalfd; and a wake-up the followers post when they end, so that waiting for
// either costs no polling delay.
class StopSignalsOrWake {
 public:
  // With `resizes`, SIGWINCH too.
  explicit StopSignalsOrWake(bool resizes) : set_(StopSignalSet()) {
    if (resizes) sigaddset(&set_, SIGWINCH);
    pthread_sigmask(SIG_BLOCK, &set_, &previous_);
    signals_ = ::signalfd(-1, &set_, SFD_CLOEXEC);
    wake_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }
  ~StopSignalsOrWake() {
    // Consume what came meanwhile, so that unblocking does not deliver it.
    timespec zero{0, 0};
    while (sigtimedwait(&set_, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    if (signals_ >= 0) ::close(signals_);
    if (wake_ >= 0) ::close(wake_);
  }
  // Any thread: ends a Wait.
  void Wake() {
    const uint64_t one = 1;
    (void)::write(wake_, &one, sizeof(one));
  }
  // A stop signal, or 0 after a Wake (or at most a second).
  int Wait() {
    pollfd fds[2] = {{signals_, POLLIN, 0}, {wake_, POLLIN, 0}};
    if (::poll(fds, 2, 1000) <= 0) return 0;
    if (fds[1].revents != 0) {
      uint64_t count;
      (void)::read(wake_, &count, sizeof(count));
    }
    signalfd_siginfo info{};
    if (fds[0].revents != 0 && ::read(signals_, &info, sizeof(info)) == sizeof(info)) {
      return static_cast<int>(info.ssi_signo);
    }
    return 0;
  }

 private:
  sigset_t set_;
  sigset_t previous_;
  int signals_ = -1;
  int wake_ = -1;
};

std::string HostLabel(const std::string& host) { return "host " + host; }

}  // namespace

void BlockStopSignals() {
  sigset_t set = StopSignalSet();
  sigaddset(&set, SIGWINCH);  // for FollowJob's terminal_size, and ignored by default anyway
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int TakePendingStopSignal() {
  const sigset_t set = StopSignalSet();
  timespec zero{0, 0};
  const int received = sigtimedwait(&set, nullptr, &zero);
  return received > 0 ? received : 0;
}

std::vector<HostEnd> CancelJob(const std::string& job_id, const std::vector<std::string>& hosts,
                               const ClientSecurity& security, bool wait) {
  std::vector<HostEnd> ends(hosts.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < hosts.size(); ++i) {
    threads.emplace_back([&, i] {
      JobClient client(hosts[i], security);
      ends[i].host = hosts[i];
      auto exit = client.Cancel(job_id, wait);
      if (exit.ok()) {
        ends[i].exit = exit.value();
      } else {
        ends[i].error = exit.status();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  return ends;
}

namespace {

// The hosts being followed, which a spare may join, and their clients; shared by the following
// threads and the thread that waits for signals.
class FollowedHosts {
 public:
  FollowedHosts(const std::vector<std::string>& hosts, const ClientSecurity& security)
      : security_(security), hosts_(hosts) {
    for (const std::string& host : hosts) {
      clients_.push_back(std::make_shared<JobClient>(host, security));
    }
  }
  std::vector<std::string> hosts() const {
    MutexLock lock(mu_);
    return hosts_;
  }
  std::shared_ptr<JobClient> client(size_t i) const {
    MutexLock lock(mu_);
    return clients_[i];
  }
  // Host i is now `host`; false when following has stopped meanwhile.
  bool Replace(size_t i, const std::string& host) {
    MutexLock lock(mu_);
    if (stopped_) return false;
    hosts_[i] = host;
    clients_[i] = std::make_shared<JobClient>(host, security_);
    return true;
  }
  void StopAll() {
    MutexLock lock(mu_);
    stopped_ = true;
    for (auto& client : clients_) client->StopAttach();
  }

 private:
  const ClientSecurity security_;
  mutable Mutex mu_;
  std::vector<std::string> hosts_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<JobClient>> clients_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
};

// Tells every followed host's daemon of the submitter's new terminal size, at once. A host that
// cannot be told is lost or has ended, which its stream reports.
void ResizeEveryTerminal(const std::string& job_id, const FollowedHosts& followed,
                         TerminalSize size) {
  if (size.rows == 0 || size.cols == 0) return;
  std::vector<std::thread> told;
  for (size_t i = 0; i < followed.hosts().size(); ++i) {
    told.emplace_back([&, client = followed.client(i)] {
      (void)client->ResizeTerminal(job_id, size.rows, size.cols, std::chrono::seconds(2));
    });
  }
  for (auto& thread : told) thread.join();
}

}  // namespace

FollowResult FollowJob(const std::string& job_id, const std::vector<std::string>& hosts,
                       const ClientSecurity& security, const FollowOptions& options,
                       RemoteConsole& console) {
  StopSignalsOrWake signals(options.terminal_size != nullptr);
  FollowResult result;
  result.hosts.resize(hosts.size());
  FollowedHosts followed(hosts, security);
  Mutex result_mu;  // result.replaced and ended_for_lost_host, which the followers fill
  std::atomic<size_t> finished{0};
  std::vector<std::thread> followers;
  for (size_t i = 0; i < hosts.size(); ++i) {
    followers.emplace_back([&, i] {
      const int host = static_cast<int>(i);
      HostEnd& end = result.hosts[i];
      end.host = hosts[i];
      while (true) {
        auto exit = followed.client(i)->Attach(
            job_id, options.follow,
            [&](v1::JobOutput::Stream stream, std::string_view data) {
              if (options.on_output) {
                options.on_output(host, stream, data);
              } else {
                console.Write(host, stream, data);
              }
            },
            [&](int64_t dropped) {
              console.Note("ddprun: " + HostLabel(end.host) + ": " + std::to_string(dropped) +
                           " bytes of earlier output are no longer kept (the full logs are in "
                           "--log_dir there)\n");
            });
        if (exit.ok()) {
          end.exit = exit.value();
          break;
        }
        end.error = exit.status();
        if (end.error.code() == StatusCode::kCancelled || !options.follow) break;
        if (options.say_lost) console.Note("ddprun: lost " + end.error.message() + "\n");
        if (!options.on_lost) break;
        const LostHostAnswer answer = options.on_lost(end);
        if (!answer.end_job_because.empty()) {
          {
            MutexLock lock(result_mu);
            result.ended_for_lost_host = true;
          }
          console.Note("ddprun: " + answer.end_job_because + "\n");
          CancelJob(job_id, followed.hosts(), security, /*wait=*/false);
        }
        if (!answer.replacement || !followed.Replace(i, *answer.replacement)) break;
        {
          MutexLock lock(result_mu);
          result.replaced.push_back(end);
        }
        end = HostEnd{.host = *answer.replacement, .exit = std::nullopt, .error = Status::Ok()};
      }
      ++finished;
      signals.Wake();
    });
  }
  while (finished < hosts.size()) {
    const int received = signals.Wait();
    if (received == 0) continue;
    if (received == SIGWINCH) {
      ResizeEveryTerminal(job_id, followed, options.terminal_size());
      continue;
    }
    if (result.signal != 0 || !options.cancel_on_signal) {
      // Stop waiting: the followers end now; a job being cancelled goes on being cancelled.
      if (result.signal == 0) result.signal = received;
      followed.StopAll();
      break;
    }
    result.signal = received;
    // Every daemon is told first (each answers at once), so that neither a second signal nor a
    // console that blocks can keep a host from hearing it; the streams then end with the agents.
    const std::vector<std::string> now = followed.hosts();
    const std::vector<HostEnd> told = CancelJob(job_id, now, security, /*wait=*/false);
    console.Note("ddprun: cancelling job " + job_id + " on " + std::to_string(now.size()) +
                 " hosts (signal again to stop waiting)\n");
    for (const HostEnd& end : told) {
      if (!end.error.ok()) console.Note("ddprun: " + end.error.message() + "\n");
    }
  }
  for (auto& follower : followers) follower.join();
  return result;
}

}  // namespace ddprun
