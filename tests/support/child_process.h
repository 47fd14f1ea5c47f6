// ChildProcess: runs a real program for a test (usually the `ddprun` binary) and lets the test
// read its output line by line, signal it, and wait for it, every wait bounded by a deadline and
// driven by poll() on the pipes and a pidfd: no sleeping. On destruction a program still running
// is killed (SIGKILL) and reaped, so a failing test leaves nothing behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddprun::testing {

using namespace std::chrono_literals;

struct ExitInfo {
  std::optional<int> exit_code;    // exited normally
  std::optional<int> term_signal;  // killed by a signal
};

class ChildProcess {
 public:
  // Starts argv[0] (a path) with the test's environment plus `env` (a value of "\x01" removes
  // the variable).
  ChildProcess(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& env = {});
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Reads output until a complete stdout line satisfies `match`; returns it, or nullopt when the
  // deadline passes or stdout ends first. Lines read on the way stay in stdout_text().
  std::optional<std::string> WaitForStdoutLine(const std::function<bool(const std::string&)>& match,
                                               std::chrono::milliseconds timeout = 30s);
  // The same for stderr.
  std::optional<std::string> WaitForStderrLine(const std::function<bool(const std::string&)>& match,
                                               std::chrono::milliseconds timeout = 30s);

  // Waits for the process to exit and its pipes to close; nullopt when the deadline passes.
  std::optional<ExitInfo> Wait(std::chrono::milliseconds timeout = 60s);

  void Signal(int signal_number);

  const std::string& stdout_text() const { return out_; }
  const std::string& stderr_text() const { return err_; }

 private:
  // Reads until a complete line of `text` (from `fd`), from `scanned` on, satisfies `match`.
  std::optional<std::string> WaitForLine(const std::string& text, size_t& scanned, const int& fd,
                                         const std::function<bool(const std::string&)>& match,
                                         std::chrono::milliseconds timeout);
  // Reads whatever is available, waiting at most until `deadline`. False once nothing can come
  // any more (pipes closed and process reaped).
  bool Pump(std::chrono::steady_clock::time_point deadline);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string out_;
  std::string err_;
  size_t out_scanned_ = 0;
  size_t err_scanned_ = 0;
  std::optional<ExitInfo> exit_;
};

// Starts, waits (bounded) and returns the finished process; fails the test on timeout.
struct RunResult {
  ExitInfo exit;
  std::string out;
  std::string err;
  int code() const { return exit.exit_code.value_or(-1); }
};
RunResult Run(const std::vector<std::string>& argv,
              const std::map<std::string, std::string>& env = {},
              std::chrono::milliseconds timeout = 60s);

// Waits until the process `pid` (not necessarily our child) no longer exists. True when it is
// gone before the deadline.
bool WaitForProcessGone(pid_t pid, std::chrono::milliseconds timeout);

// Lines of `text` (without their '\n').
std::vector<std::string> Lines(const std::string& text);

// The path of `program` on PATH, as the shell finds it; "" when it is not there.
std::string FindOnPath(const std::string& program);

// The whole of a file ("" when it cannot be read).
std::string ReadFile(const std::string& path);

// How a process ended, from its wait status.
ExitInfo ExitInfoOf(int wait_status);

// A fresh directory under the test's temporary directory, removed with the object.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace ddprun::testing
