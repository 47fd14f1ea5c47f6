// HostedJob; see hosted_job.h.
#include "hosted_job.h"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

constexpr size_t kReadBytes = 64 << 10;

// Milliseconds from now until `when` for poll(): 0 when past, -1 (forever) when none.
int PollTimeout(std::optional<std::chrono::steady_clock::time_point> when) {
  if (!when) return -1;
  const auto left =
      std::chrono::ceil<std::chrono::milliseconds>(*when - std::chrono::steady_clock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left.count(), 60'000));
}

}  // namespace

HostedJob::HostedJob(HostedJobDescription description, size_t output_capacity)
    : description_(std::move(description)), output_(output_capacity) {}

Result<std::shared_ptr<HostedJob>> HostedJob::Start(HostedJobDescription description,
                                                    AgentLaunch launch, size_t output_capacity) {
  std::shared_ptr<HostedJob> job(new HostedJob(std::move(description), output_capacity));
  job->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (job->wake_fd_ < 0)
    return ErrnoError("creating an eventfd for job " + job->description_.job_id, errno);
  // The thread owns the promise: set_value may still touch it after this thread has woken.
  std::promise<Status> started;
  std::future<Status> result = started.get_future();
  job->terminal_size_file_ = launch.terminal_size_file;
  HostedJob* self = job.get();
  job->thread_ =
      std::thread([self, launch = std::move(launch), started = std::move(started)]() mutable {
        self->Run(std::move(launch), &started);
      });
  Status status = result.get();
  if (!status.ok()) {
    job->thread_.join();
    return status;
  }
  return job;
}

HostedJob::~HostedJob() {
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) ::close(wake_fd_);
  CloseInput();
  if (!terminal_size_file_.empty()) ::unlink(terminal_size_file_.c_str());
}

Status HostedJob::ResizeTerminal(TerminalSize size) {
  if (terminal_size_file_.empty()) {
    return FailedPreconditionError("job " + description_.job_id +
                                   "'s workers here have no terminals");
  }
  MutexLock lock(mu_);  // while the agent has not been reaped, its pid is its own
  if (exit_) return FailedPreconditionError("job " + description_.job_id + " has ended here");
  RETURN_IF_ERROR(WriteFileAtomically(
      terminal_size_file_, std::to_string(size.rows) + "x" + std::to_string(size.cols) + "\n",
      0600));
  if (::kill(pid_, SIGWINCH) != 0) {
    return ErrnoError("telling job " + description_.job_id + "'s agent of a new terminal size",
                      errno);
  }
  return Status::Ok();
}

bool HostedJob::ClaimInput() {
  MutexLock lock(input_mu_);
  if (input_fd_ < 0 || input_claimed_) return false;
  input_claimed_ = true;
  return true;
}

Status HostedJob::WriteInput(std::string_view data) {
  MutexLock lock(input_mu_);
  if (input_fd_ < 0) return FailedPreconditionError("the agent's input is closed");
  return WriteAll(input_fd_, data, "job " + description_.job_id + "'s input");
}

void HostedJob::CloseInput() {
  MutexLock lock(input_mu_);
  if (input_fd_ >= 0) ::close(input_fd_);
  input_fd_ = -1;
}

void HostedJob::Run(AgentLaunch launch, std::promise<Status>* started) {
  SpawnOptions options;
  options.working_dir = launch.working_dir;
  if (launch.forward_input) options.stdin_channel = InputChannel::kForwarded;
  auto spawned = SpawnWorker(launch.argv, launch.environment, options);
  if (!spawned.ok()) {
    started->set_value(spawned.status());
    return;
  }
  pid_ = spawned->pid;
  if (spawned->pidfd >= 0) ::close(spawned->pidfd);  // reaped by pid (Reap)
  {
    MutexLock lock(input_mu_);
    input_fd_ = spawned->stdin_fd;  // -1 without forward_input
  }
  started->set_value(Status::Ok());  // `started` is gone from here on
  Relay(spawned->stdout_fd, spawned->stderr_fd);
  Reap();
  if (launch.on_ended) launch.on_ended();
}

// Keeps what the agent writes until both streams end, killing it when a cancel's grace is over.
void HostedJob::Relay(int stdout_fd, int stderr_fd) {
  pollfd fds[3] = {{stdout_fd, POLLIN, 0}, {stderr_fd, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  const OutputStream streams[2] = {OutputStream::kStdout, OutputStream::kStderr};
  std::string buffer(kReadBytes, '\0');
  int open_streams = 2;
  while (open_streams > 0) {
    const int ready = ::poll(fds, 3, PollTimeout(KillDeadline()));
    if (ready < 0 && errno != EINTR) {
      GetLogger("daemon")->error(
          "{}", ErrnoError("polling job " + description_.job_id + "'s output", errno).message());
      break;
    }
    if (KillDue()) ::kill(-pid_, SIGKILL);
    if (fds[2].revents != 0) {
      uint64_t ignored;
      (void)::read(wake_fd_, &ignored, sizeof(ignored));
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;  // poll ignores it from now on
        --open_streams;
        continue;
      }
      MutexLock lock(mu_);
      output_.Append(streams[i], std::string_view(buffer.data(), static_cast<size_t>(n)));
      changed_.notify_all();
    }
  }
  for (int i = 0; i < 2; ++i) {
    if (fds[i].fd >= 0) ::close(fds[i].fd);
  }
}

// Waits for the agent's exit, killing it when a cancel's grace is over, and records how it ended.
// The exit is seen without reaping (WNOWAIT) and recorded before the reap, so Cancel, which
// signals only while no exit is recorded, never signals a pid the kernel may have reused.
void HostedJob::Reap() {
  siginfo_t info{};
  while (true) {
    info.si_pid = 0;
    const int waited = ::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
    if ((waited == 0 && info.si_pid == pid_) || (waited < 0 && errno != EINTR)) break;
    if (KillDue()) ::kill(-pid_, SIGKILL);
    // The streams closed: the agent is exiting. Look again soon, or at the kill deadline.
    pollfd wake{wake_fd_, POLLIN, 0};
    const int timeout = PollTimeout(KillDeadline());
    ::poll(&wake, 1, timeout < 0 || timeout > 20 ? 20 : timeout);
  }
  AgentExit exit;
  if (info.si_code == CLD_EXITED) {
    exit.exit_code = info.si_status;
  } else {
    exit.term_signal = info.si_status;
  }
  {
    MutexLock lock(mu_);
    exit.cancelled = cancelled_;
    exit_ = exit;
  }
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  MutexLock lock(mu_);
  changed_.notify_all();
}

std::optional<std::chrono::steady_clock::time_point> HostedJob::KillDeadline() {
  MutexLock lock(mu_);
  return kill_at_;
}

bool HostedJob::KillDue() {
  MutexLock lock(mu_);
  if (!kill_at_ || std::chrono::steady_clock::now() < *kill_at_) return false;
  kill_at_.reset();  // once
  return true;
}

void HostedJob::Wake() {
  const uint64_t one = 1;
  (void)::write(wake_fd_, &one, sizeof(one));
}

void HostedJob::Cancel(std::chrono::milliseconds grace) {
  {
    MutexLock lock(mu_);
    if (exit_ || cancelled_) return;
    cancelled_ = true;
    kill_at_ = std::chrono::steady_clock::now() + grace;
    // The agent alone: it stops its workers itself, within its --shutdown_timeout.
    ::kill(pid_, SIGTERM);
  }
  Wake();
}

bool HostedJob::WaitEnded(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  return changed_.wait_until(lock, deadline, [this]() REQUIRES(mu_) { return exit_.has_value(); });
}

HostedJobRead HostedJob::Read(int64_t from, size_t max_bytes,
                              std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(mu_);
  changed_.wait_until(lock, deadline, [this, from]() REQUIRES(mu_) {
    return exit_.has_value() || output_.end() > from;
  });
  HostedJobRead read;
  read.output = output_.Read(from, max_bytes);
  read.end = output_.end();
  read.exit = exit_;
  return read;
}

std::optional<AgentExit> HostedJob::exit() const {
  MutexLock lock(mu_);
  return exit_;
}

}  // namespace ddprun
