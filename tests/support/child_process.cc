// ChildProcess and friends; see child_process.h.
#include "support/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace ddprun::testing {
namespace {

int PidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

[[noreturn]] void Die(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

ChildProcess::ChildProcess(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& env) {
  std::map<std::string, std::string> merged;
  for (char** entry = environ; *entry; ++entry) {
    std::string text(*entry);
    auto eq = text.find('=');
    if (eq != std::string::npos) merged[text.substr(0, eq)] = text.substr(eq + 1);
  }
  for (const auto& [key, value] : env) {
    if (value == "\x01") {
      merged.erase(key);
    } else {
      merged[key] = value;
    }
  }
  std::vector<std::string> env_strings;
  for (const auto& [key, value] : merged) env_strings.push_back(key + "=" + value);
  std::vector<char*> c_env, c_argv;
  for (auto& s : env_strings) c_env.push_back(s.data());
  c_env.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) c_argv.push_back(s.data());
  c_argv.push_back(nullptr);

  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) Die("pipe2");
  pid_ = ::fork();
  if (pid_ < 0) Die("fork");
  if (pid_ == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    int null_fd = ::open("/dev/null", O_RDONLY);
    ::dup2(null_fd, STDIN_FILENO);
    ::execve(c_argv[0], c_argv.data(), c_env.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  pidfd_ = PidfdOpen(pid_);
  if (pidfd_ < 0) Die("pidfd_open");
}

ChildProcess::~ChildProcess() {
  if (!exit_) {
    ::kill(pid_, SIGKILL);
    int status;
    ::waitpid(pid_, &status, 0);
  }
  for (int fd : {pidfd_, out_fd_, err_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

bool ChildProcess::Pump(std::chrono::steady_clock::time_point deadline) {
  if (exit_ && out_fd_ < 0 && err_fd_ < 0) return false;
  pollfd fds[3] = {{out_fd_, POLLIN, 0}, {err_fd_, POLLIN, 0}, {exit_ ? -1 : pidfd_, POLLIN, 0}};
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() < 0) left = std::chrono::milliseconds(0);
  const int ready = ::poll(fds, 3, static_cast<int>(left.count()));
  if (ready < 0 && errno != EINTR) Die("poll");
  char buffer[65536];
  for (auto [fd, text] : {std::pair{&out_fd_, &out_}, {&err_fd_, &err_}}) {
    pollfd& p = fd == &out_fd_ ? fds[0] : fds[1];
    if (*fd < 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = ::read(*fd, buffer, sizeof(buffer));
    if (n > 0) {
      text->append(buffer, static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      ::close(*fd);
      *fd = -1;
    }
  }
  if (!exit_ && (fds[2].revents & POLLIN)) {
    int status = 0;
    if (::waitpid(pid_, &status, 0) == pid_) exit_ = ExitInfoOf(status);
  }
  return true;
}

std::optional<std::string> ChildProcess::WaitForStdoutLine(
    const std::function<bool(const std::string&)>& match, std::chrono::milliseconds timeout) {
  return WaitForLine(out_, out_scanned_, out_fd_, match, timeout);
}

std::optional<std::string> ChildProcess::WaitForStderrLine(
    const std::function<bool(const std::string&)>& match, std::chrono::milliseconds timeout) {
  return WaitForLine(err_, err_scanned_, err_fd_, match, timeout);
}

std::optional<std::string> ChildProcess::WaitForLine(
    const std::string& text, size_t& scanned, const int& fd,
    const std::function<bool(const std::string&)>& match, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    size_t newline;
    while ((newline = text.find('\n', scanned)) != std::string::npos) {
      std::string line = text.substr(scanned, newline - scanned);
      scanned = newline + 1;
      if (match(line)) return line;
    }
    if (std::chrono::steady_clock::now() >= deadline || fd < 0) return std::nullopt;
    if (!Pump(deadline)) return std::nullopt;
  }
}

std::optional<ExitInfo> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!(exit_ && out_fd_ < 0 && err_fd_ < 0)) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    Pump(deadline);
  }
  return exit_;
}

void ChildProcess::Signal(int signal_number) {
  if (!exit_) ::kill(pid_, signal_number);
}

RunResult Run(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
              std::chrono::milliseconds timeout) {
  ChildProcess child(argv, env);
  auto exit = child.Wait(timeout);
  if (!exit) {
    throw std::runtime_error("'" + argv[0] + "' did not finish within " +
                             std::to_string(timeout.count()) + " ms; stdout so far:\n" +
                             child.stdout_text() + "\nstderr so far:\n" + child.stderr_text());
  }
  return {*exit, child.stdout_text(), child.stderr_text()};
}

bool WaitForProcessGone(pid_t pid, std::chrono::milliseconds timeout) {
  const int fd = PidfdOpen(pid);
  if (fd < 0) return errno == ESRCH;
  pollfd p{fd, POLLIN, 0};
  const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
  ::close(fd);
  return ready == 1;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddprun_test_XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) Die("mkdtemp");
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string FindOnPath(const std::string& program) {
  auto found = Run({"/bin/sh", "-c", "command -v " + program});
  return found.code() == 0 && !found.out.empty() ? Lines(found.out).front() : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

ExitInfo ExitInfoOf(int wait_status) {
  ExitInfo info;
  if (WIFEXITED(wait_status)) info.exit_code = WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) info.term_signal = WTERMSIG(wait_status);
  return info;
}

}  // namespace ddprun::testing
