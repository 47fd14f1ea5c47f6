// StopSignalWatch; see stop_signal_watch.h.
#include "stop_signal_watch.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/post.hpp>
#include <cerrno>

namespace ddprun {
namespace {

constexpr std::array<int, 4> kStopSignals = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The pipe's write end while a watch lives (-1 otherwise), and what each signal did before it.
std::atomic<int> handler_pipe{-1};
std::array<struct sigaction, kStopSignals.size()> dispositions_before;

// Async-signal-safe: one byte, the signal's number, into a pipe that never blocks (a full pipe
// holds 64 KiB of signals nobody took yet: one more is dropped, never waited on).
void OnStopSignal(int signal_number) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signal_number);
  if (const int fd = handler_pipe.load(); fd >= 0) {
    [[maybe_unused]] const ssize_t written = ::write(fd, &byte, 1);
  }
  errno = saved_errno;
}

void RestoreDispositions(size_t installed) {
  for (size_t i = 0; i < installed; ++i) {
    ::sigaction(kStopSignals[i], &dispositions_before[i], nullptr);
  }
}

}  // namespace

Result<std::unique_ptr<StopSignalWatch>> StopSignalWatch::Start(boost::asio::io_context& io) {
  if (handler_pipe.load() >= 0) return InternalError("a stop signal watch runs already");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    return ErrnoError("making the stop signals' pipe", errno);
  }
  handler_pipe.store(fds[1]);
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigfillset(&action.sa_mask);  // one handler at a time: the bytes keep the signals' order
  action.sa_flags = SA_RESTART;
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    if (::sigaction(kStopSignals[i], &action, &dispositions_before[i]) != 0) {
      const int error = errno;
      RestoreDispositions(i);
      handler_pipe.store(-1);
      ::close(fds[0]);
      ::close(fds[1]);
      return ErrnoError("handling the stop signals", error);
    }
  }
  return std::unique_ptr<StopSignalWatch>(new StopSignalWatch(io, fds[0]));
}

StopSignalWatch::StopSignalWatch(boost::asio::io_context& io, int read_fd)
    : received_(io, read_fd) {}

StopSignalWatch::~StopSignalWatch() {
  RestoreDispositions(kStopSignals.size());
  const int write_fd = handler_pipe.exchange(-1);
  ::close(write_fd);
  // received_ closes the read end.
}

void StopSignalWatch::AsyncWait(std::function<void(int)> on_signal) {
  waiting_ = true;
  // The loop sees the pipe's edges only (asio's epoll is edge-triggered): a byte already there,
  // whose edge came while nobody waited, is told now, not waited for.
  int pending = 0;
  if (::ioctl(received_.native_handle(), FIONREAD, &pending) == 0 && pending > 0) {
    boost::asio::post(received_.get_executor(),
                      [this, on_signal = std::move(on_signal)] { Tell(on_signal); });
    return;
  }
  received_.async_wait(
      boost::asio::posix::stream_descriptor::wait_read,
      [this, on_signal = std::move(on_signal)](const boost::system::error_code& error) {
        if (!error) Tell(on_signal);  // else cancelled, or the watch is gone
      });
}

void StopSignalWatch::Tell(const std::function<void(int)>& on_signal) {
  if (!waiting_) return;  // cancelled
  waiting_ = false;
  if (std::optional<int> signal_number = Take()) {
    on_signal(*signal_number);
  } else {
    AsyncWait(on_signal);  // taken first
  }
}

void StopSignalWatch::Cancel() {
  waiting_ = false;
  boost::system::error_code ignored;
  received_.cancel(ignored);
}

std::optional<int> StopSignalWatch::Take() {
  unsigned char byte = 0;
  if (::read(received_.native_handle(), &byte, 1) == 1) return static_cast<int>(byte);
  return std::nullopt;
}

}  // namespace ddprun
