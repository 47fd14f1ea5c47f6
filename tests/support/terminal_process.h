// TerminalProcess: runs a real program (usually `ddprun`) on a real pseudo-terminal, as a user's
// shell would: a session of its own whose controlling terminal is the pty, with stdin, stdout and
// stderr on it. The test reads what the program shows, types input, resizes the window, and
// waits for the exit; every wait is bounded. On destruction a program still running is killed
// (SIGKILL) and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace ddprun::testing {

class TerminalProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // The terminal starts rows x cols, in the usual cooked mode (echo, "\n" shown as "\r\n").
  TerminalProcess(const std::vector<std::string>& argv, unsigned short rows = 24,
                  unsigned short cols = 80);
  ~TerminalProcess();
  TerminalProcess(const TerminalProcess&) = delete;
  TerminalProcess& operator=(const TerminalProcess&) = delete;

  pid_t pid() const { return pid_; }

  // Reads until the screen text (screen()) contains `text`; false when the deadline passes or
  // the terminal closes first.
  bool WaitFor(const std::string& text, std::chrono::milliseconds timeout = 30s);
  // Types `input` (the terminal echoes it, as a terminal does).
  void Type(const std::string& input);
  // Resizes the window: the program gets SIGWINCH.
  void Resize(unsigned short rows, unsigned short cols);
  // Reads until the program exits and the terminal closes; nullopt when the deadline passes.
  std::optional<ExitInfo> Wait(std::chrono::milliseconds timeout = 60s);

  // Everything shown so far, with the terminal's "\r\n" turned back into "\n".
  std::string screen() const;
  // The bytes as the terminal gave them.
  const std::string& raw() const { return raw_; }

 private:
  // Reads what is there, waiting at most until `deadline`; false once nothing more can come.
  bool Pump(Clock::time_point deadline);

  pid_t pid_ = -1;
  int pidfd_ = -1;
  int master_ = -1;
  std::string raw_;
  std::optional<ExitInfo> exit_;
};

}  // namespace ddprun::testing
