// PythonPreload; see python_preload.h. The protocol is python_preload.py's.
#include "ddprun/agent/python_preload.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <cstring>

#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_failure.h"

namespace ddprun {

extern const char kPythonPreloadSource[];

namespace {

// The answers the interpreter sends are short; a start request holds a worker's whole
// environment, which the socket's buffer must take at once.
constexpr size_t kAnswerBytes = 4096;
constexpr int kSocketBufferBytes = 4 << 20;
// How long one worker's fork and setup may take before the interpreter counts as gone.
constexpr int kForkBoundMs = 30'000;
// Room in the interpreter's environment for a forked worker's own. /proc/PID/environ shows the
// bytes where the kernel put a process's environment at exec, which a process cannot move
// without CAP_SYS_RESOURCE; a worker writes its environment there (python_preload.py), so that
// area is made larger than the interpreter's own by this much, in a variable it drops at once.
// The workers' environments differ from the interpreter's in a few of ddprun's values.
constexpr char kEnvironRoomVariable[] = "DDPRUN_ENVIRON_ROOM";
constexpr size_t kEnvironRoomBytes = 8192;

std::vector<std::string> SplitFields(const char* data, size_t size) {
  std::vector<std::string> fields;
  std::string field;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\0') {
      fields.push_back(std::move(field));
      field.clear();
    } else {
      field += data[i];
    }
  }
  fields.push_back(std::move(field));
  return fields;
}

void AddField(std::string& message, const std::string& field) {
  if (!message.empty()) message += '\0';
  message += field;
}

// Waits up to `bound_ms` for `fd` to be readable; false when it is not.
bool ReadableWithin(int fd, int bound_ms) {
  pollfd ready{fd, POLLIN, 0};
  int polled;
  do {
    polled = ::poll(&ready, 1, bound_ms);
  } while (polled < 0 && errno == EINTR);
  return polled > 0;
}

// "was killed by SIGKILL", "exited with status 1": the end of a reaped process.
std::string HowItEnded(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    return std::string("was killed by ") + SignalName(WTERMSIG(wait_status));
  }
  return "exited with status " + std::to_string(WEXITSTATUS(wait_status));
}

}  // namespace

bool ReadByInterpreterAtStart(const std::string& entry) { return entry.rfind("PYTHON", 0) == 0; }

struct PythonPreload::Watch {
  explicit Watch(boost::asio::io_context& io, int fd) : socket(io, fd) {}
  boost::asio::posix::stream_descriptor socket;
};

PythonPreload::PythonPreload(PythonPreloadSpec spec) : spec_(std::move(spec)) {}

Result<std::unique_ptr<PythonPreload>> PythonPreload::Start(boost::asio::io_context& io,
                                                            PythonPreloadSpec spec) {
  int subreaper = 0;
  if (::prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || subreaper == 0) {
    return FailedPreconditionError(
        "this process is not a child subreaper, so forked workers would not be its children");
  }
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return ErrnoError("creating the preloading interpreter's socket", errno);
  }
  for (const int end : ends) {
    ::setsockopt(end, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
    ::setsockopt(end, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  }
  std::unique_ptr<PythonPreload> preload(new PythonPreload(std::move(spec)));
  const PythonPreloadSpec& how = preload->spec_;
  std::vector<std::string> argv = how.interpreter;
  argv.insert(argv.end(), {"-c", kPythonPreloadSource, std::to_string(ends[1]),
                           how.module ? "module" : "script", how.program});
  argv.insert(argv.end(), how.modules.begin(), how.modules.end());
  SpawnOptions options = how.spawn;
  options.stdout_channel = OutputChannel::kThisProcessStderr;
  options.stderr_channel = OutputChannel::kThisProcessStderr;
  options.stdin_channel = InputChannel::kNull;
  options.inherited_fd = ends[1];
  options.debuggable_by_parent = false;
  std::vector<std::string> envp = how.envp;
  envp.push_back(std::string(kEnvironRoomVariable) + "=" + std::string(kEnvironRoomBytes, '.'));
  auto started = SpawnWorker(argv, envp, options);
  ::close(ends[1]);
  if (!started.ok()) {
    ::close(ends[0]);
    return Status(started.status().code(),
                  "starting the preloading interpreter: " + started.status().message());
  }
  preload->pid_ = started->pid;
  preload->pidfd_ = started->pidfd;
  preload->control_fd_ = ends[0];
  const int watched = ::fcntl(ends[0], F_DUPFD_CLOEXEC, 0);
  if (watched < 0) return ErrnoError("watching the preloading interpreter", errno);
  preload->watch_ = std::make_unique<Watch>(io, watched);
  PythonPreload* self = preload.get();
  preload->watch_->socket.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                                     [self](const boost::system::error_code& error) {
                                       if (!error) self->OnReadable();
                                     });
  return preload;
}

PythonPreload::~PythonPreload() {
  watch_.reset();  // cancels its wait
  if (control_fd_ >= 0) ::close(control_fd_);
  if (pid_ > 0) Reap(1000);
  if (pidfd_ >= 0) ::close(pidfd_);
}

void PythonPreload::OnReadable() {
  if (state_ != State::kImporting) return;
  char answer[kAnswerBytes];
  const ssize_t got = ::recv(control_fd_, answer, sizeof(answer), MSG_DONTWAIT);
  if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
    watch_->socket.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                              [this](const boost::system::error_code& error) {
                                if (!error) OnReadable();
                              });
    return;
  }
  const std::vector<std::string> fields =
      got > 0 ? SplitFields(answer, static_cast<size_t>(got)) : std::vector<std::string>{};
  if (!fields.empty() && fields[0] == "ready") {
    state_ = State::kReady;
  } else if (fields.size() >= 2 && fields[0] == "failed") {
    Fail(fields[1]);
  } else {
    Fail("the preloading interpreter " + Reap(1000) + " before it was ready");
  }
  std::vector<std::function<void()>> waiting = std::move(waiting_);
  for (auto& settled : waiting) settled();
}

void PythonPreload::Fail(std::string why) {
  state_ = State::kFailed;
  failure_ = std::move(why);
  if (control_fd_ >= 0) ::close(control_fd_);
  control_fd_ = -1;
  if (pid_ > 0) Reap(1000);
}

std::string PythonPreload::Reap(int bound_ms) {
  if (pid_ <= 0) return "is gone";
  if (pidfd_ < 0 || !ReadableWithin(pidfd_, bound_ms)) ::kill(pid_, SIGKILL);
  int wait_status = 0;
  pid_t reaped;
  do {
    reaped = ::waitpid(pid_, &wait_status, 0);
  } while (reaped < 0 && errno == EINTR);
  pid_ = -1;
  return reaped < 0 ? "is gone" : HowItEnded(wait_status);
}

void PythonPreload::WhenSettled(std::function<void()> settled) {
  if (state_ != State::kImporting) {
    settled();
    return;
  }
  waiting_.push_back(std::move(settled));
}

bool PythonPreload::Serving() {
  if (state_ != State::kReady) return false;
  // Its end of the socket closes as it dies, before it can be reaped.
  pollfd hung_up{control_fd_, POLLRDHUP, 0};
  if (::poll(&hung_up, 1, 0) > 0 && (hung_up.revents & (POLLRDHUP | POLLHUP)) != 0) {
    Fail("the preloading interpreter " + Reap(1000));
    return false;
  }
  int wait_status = 0;
  const pid_t reaped = ::waitpid(pid_, &wait_status, WNOHANG);
  if (reaped == 0) return true;
  pid_ = -1;
  Fail("the preloading interpreter " + (reaped < 0 ? "is gone" : HowItEnded(wait_status)));
  return false;
}

bool PythonPreload::Fits(const std::vector<std::string>& envp) const {
  std::vector<std::string> given, asked;
  for (const auto& entry : spec_.envp) {
    if (ReadByInterpreterAtStart(entry)) given.push_back(entry);
  }
  for (const auto& entry : envp) {
    if (ReadByInterpreterAtStart(entry)) asked.push_back(entry);
  }
  std::sort(given.begin(), given.end());
  std::sort(asked.begin(), asked.end());
  return given == asked;
}

Status PythonPreload::Send(const ForkedStart& start) {
  if (state_ != State::kReady || control_fd_ < 0) {
    return UnavailableError("the preloading interpreter is not serving");
  }
  std::string message;
  for (const std::string& field :
       {std::string("start"), std::to_string(::getpid()),
        std::string(start.terminal_session ? "1" : "0"),
        std::string(start.debuggable_by_parent ? "1" : "0"), std::to_string(start.inherited_fd),
        start.working_dir, start.binding ? FormatCpuList(start.binding->cpus) : std::string(),
        std::to_string(start.binding ? start.binding->memory_node : -1),
        std::to_string(start.argv.size())}) {
    AddField(message, field);
  }
  for (const auto& arg : start.argv) AddField(message, arg);
  for (const auto& entry : start.envp) AddField(message, entry);
  std::vector<int> fds = {start.stdin_fd, start.stdout_fd, start.stderr_fd};
  if (start.inherited_fd >= 0) fds.push_back(start.inherited_fd);
  iovec data{message.data(), message.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control.data();
  header.msg_controllen = control.size();
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
  std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * fds.size());
  ssize_t sent;
  do {
    sent = ::sendmsg(control_fd_, &header, MSG_NOSIGNAL);
  } while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    const int error = errno;
    Fail(error == EPIPE || error == ECONNRESET
             ? "the preloading interpreter " + Reap(1000)
             : std::string("sending the preloading interpreter a worker: ") + std::strerror(error));
    return UnavailableError(failure_);
  }
  return Status::Ok();
}

Result<pid_t> PythonPreload::Collect() {
  if (control_fd_ < 0) return UnavailableError("the preloading interpreter is gone");
  if (!ReadableWithin(control_fd_, kForkBoundMs)) {
    Fail("the preloading interpreter did not start a worker within " +
         std::to_string(kForkBoundMs / 1000) + " s");
    return UnavailableError(failure_);
  }
  char answer[kAnswerBytes];
  ssize_t got;
  do {
    got = ::recv(control_fd_, answer, sizeof(answer), 0);
  } while (got < 0 && errno == EINTR);
  const std::vector<std::string> fields =
      got > 0 ? SplitFields(answer, static_cast<size_t>(got)) : std::vector<std::string>{};
  if (fields.size() == 2 && fields[0] == "started") return static_cast<pid_t>(std::stol(fields[1]));
  if (fields.size() == 4 && fields[0] == "failed-setup") {
    const auto pid = static_cast<pid_t>(std::stol(fields[1]));
    int ignored;
    while (::waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    const int error = std::stoi(fields[3]);
    const char* step = fields[2] == "2"   ? "entering its working directory"
                       : fields[2] == "3" ? "binding it to its CPUs (--numa_binding)"
                                          : "setting it up";
    return ErrnoError(step, error);
  }
  if (fields.size() == 2 && fields[0] == "refused") {
    return UnavailableError("the preloading interpreter refused a worker: " + fields[1]);
  }
  Fail("the preloading interpreter " + Reap(1000) + " while starting a worker");
  return UnavailableError(failure_);
}

}  // namespace ddprun
