// InputSender; see input_sender.h.
#include "input_sender.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

#include "ddprun/base/logging.h"

namespace ddprun {
namespace {

constexpr int kBackgroundRetryMs = 500;
constexpr size_t kReadBytes = 64 << 10;

}  // namespace

InputSender::InputSender(std::string job_id, const std::vector<std::string>& hosts,
                         const ClientSecurity& security, std::function<void()> line_entered)
    : job_id_(std::move(job_id)),
      line_entered_(::isatty(STDIN_FILENO) == 1 ? std::move(line_entered) : nullptr),
      stop_fd_(::eventfd(0, EFD_CLOEXEC)) {
  for (const std::string& address : hosts) {
    auto host = std::make_unique<Host>();
    host->client = std::make_unique<JobClient>(address, security);
    Host* self = host.get();
    host->sender = std::thread([this, self] {
      (void)self->client->SendInput(job_id_, [self]() -> std::optional<std::string> {
        MutexLock lock(self->mu);
        self->changed.wait(
            lock, [self]() REQUIRES(self->mu) { return !self->queue.empty() || self->ended; });
        if (self->queue.empty()) return std::nullopt;
        std::string data = std::move(self->queue.front());
        self->queue.pop_front();
        self->queued_bytes -= data.size();
        return data;
      });
    });
    hosts_.push_back(std::move(host));
  }
  reader_ = std::thread([this] { ReadLoop(); });
}

InputSender::~InputSender() {
  const uint64_t one = 1;
  (void)::write(stop_fd_, &one, sizeof(one));
  reader_.join();
  EndInput();
  for (auto& host : hosts_) {
    host->client->StopInput();  // a stream blocked on a host that takes nothing ends now
    host->sender.join();
  }
  ::close(stop_fd_);
}

void InputSender::ReadLoop() {
  std::string buffer(kReadBytes, '\0');
  while (true) {
    pollfd fds[2] = {{STDIN_FILENO, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) return;  // stopped: the streams are ended by the destructor
    if (fds[0].revents == 0) continue;
    const ssize_t n = ::read(STDIN_FILENO, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EIO || errno == EAGAIN)) {
      // In the background of its terminal: try again later, as the agent does.
      pollfd stop{stop_fd_, POLLIN, 0};
      if (::poll(&stop, 1, kBackgroundRetryMs) > 0) return;
      continue;
    }
    if (n <= 0) break;  // end of input
    const std::string data(buffer.data(), static_cast<size_t>(n));
    Offer(data);
    if (line_entered_ && data.find('\n') != std::string::npos) line_entered_();
  }
  EndInput();
}

void InputSender::Offer(const std::string& data) {
  for (auto& host : hosts_) {
    bool first_overflow = false;
    {
      MutexLock lock(host->mu);
      if (host->queued_bytes + data.size() > kHostQueueBytes) {
        first_overflow = !host->overflowed;
        host->overflowed = true;
      } else {
        host->queue.push_back(data);
        host->queued_bytes += data.size();
        host->changed.notify_all();
      }
    }
    if (first_overflow) {
      auto logger = GetLogger("launcher");
      logger->debug("host {} takes no input now; input beyond {} MiB waiting for it is dropped",
                    host->client->address(), kHostQueueBytes >> 20);
    }
  }
}

void InputSender::EndInput() {
  for (auto& host : hosts_) {
    MutexLock lock(host->mu);
    host->ended = true;
    host->changed.notify_all();
  }
}

}  // namespace ddprun
