// TerminalProcess; see terminal_process.h.
#include "support/terminal_process.h"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace ddprun::testing {
namespace {

[[noreturn]] void Die(const std::string& what) {
  std::perror(what.c_str());
  std::abort();
}

std::string CookedToText(const std::string& raw) {
  std::string text;
  text.reserve(raw.size());
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n') continue;
    text.push_back(raw[i]);
  }
  return text;
}

}  // namespace

TerminalProcess::TerminalProcess(const std::vector<std::string>& argv, unsigned short rows,
                                 unsigned short cols) {
  std::vector<std::string> argv_copy = argv;
  std::vector<char*> c_argv;
  for (auto& s : argv_copy) c_argv.push_back(s.data());
  c_argv.push_back(nullptr);
  winsize window{rows, cols, 0, 0};
  pid_ = ::forkpty(&master_, nullptr, nullptr, &window);
  if (pid_ < 0) Die("forkpty");
  if (pid_ == 0) {
    ::execv(c_argv[0], c_argv.data());
    ::_exit(127);
  }
  ::fcntl(master_, F_SETFD, FD_CLOEXEC);
  pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd_ < 0) Die("pidfd_open");
}

TerminalProcess::~TerminalProcess() {
  if (!exit_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (master_ >= 0) ::close(master_);
  ::close(pidfd_);
}

bool TerminalProcess::Pump(Clock::time_point deadline) {
  if (exit_ && master_ < 0) return false;
  pollfd fds[2] = {{master_, POLLIN, 0}, {exit_ ? -1 : pidfd_, POLLIN, 0}};
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() < 0) left = std::chrono::milliseconds(0);
  if (::poll(fds, 2, static_cast<int>(left.count())) < 0 && errno != EINTR) Die("poll");
  if (master_ >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
    char buffer[65536];
    const ssize_t n = ::read(master_, buffer, sizeof(buffer));
    if (n > 0) {
      raw_.append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {  // EIO: every holder of the terminal is gone
      ::close(master_);
      master_ = -1;
    }
  }
  if (!exit_ && (fds[1].revents & POLLIN)) {
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) exit_ = ExitInfoOf(status);
  }
  return true;
}

bool TerminalProcess::WaitFor(const std::string& text, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (screen().find(text) == std::string::npos) {
    if (Clock::now() >= deadline || !Pump(deadline)) return false;
    if (master_ < 0) return screen().find(text) != std::string::npos;
  }
  return true;
}

void TerminalProcess::Type(const std::string& input) {
  if (::write(master_, input.data(), input.size()) != static_cast<ssize_t>(input.size())) {
    Die("writing to the terminal");
  }
}

void TerminalProcess::Resize(unsigned short rows, unsigned short cols) {
  winsize window{rows, cols, 0, 0};
  if (::ioctl(master_, TIOCSWINSZ, &window) != 0) Die("TIOCSWINSZ");
}

std::optional<ExitInfo> TerminalProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!exit_ || master_ >= 0) {
    if (Clock::now() >= deadline) return std::nullopt;
    if (!Pump(deadline)) break;
  }
  return exit_;
}

std::string TerminalProcess::screen() const { return CookedToText(raw_); }

}  // namespace ddprun::testing
