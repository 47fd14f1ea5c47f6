// OutputPump: forwards one worker stream (stdout or stderr) from its pipe as it arrives.
// To the console through a ConsoleStream (whole lines behind the rank's prefix, partial lines at
// '\r' and once kPartialLineDelay passes without more output); to a log file, the bytes as
// written.
// The worker's end is a pipe or a pseudo-terminal (its master); a terminal ends with EIO where a
// pipe ends with end of file, and hands over its last bytes a moment later (the kernel's tty
// layer flushes asynchronously), so a terminal's pump keeps reading for kTerminalDrain after the
// worker exits. Runs on the supervisor's io_context; not thread-safe. Keep it in a shared_ptr:
// pending reads hold a reference.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "ddprun/agent/console_stream.h"
#include "ddprun/agent/shared_console.h"
#include "ddprun/base/process_spawn.h"

namespace ddprun {

class OutputPump : public std::enable_shared_from_this<OutputPump> {
 public:
  // How long a partial line (a prompt, a progress bar) may wait for its end before it is shown.
  static constexpr std::chrono::milliseconds kPartialLineDelay{100};
  // How long a terminal is read after its worker exited, at most.
  static constexpr std::chrono::milliseconds kTerminalDrain{200};

  // Takes ownership of pipe_fd (`terminal`: a pseudo-terminal's master) and file_fd (-1: no
  // file). console_fd -1: no console output; it is not owned, and written through `console`.
  OutputPump(boost::asio::io_context& io, int pipe_fd, bool terminal,
             std::shared_ptr<SharedConsole> console, int console_fd, std::string prefix,
             int file_fd);
  ~OutputPump();

  // Starts reading asynchronously until end of stream or Finish().
  void Start();
  // Forwards whatever the pipe holds now without waiting for more, then closes everything
  // (on this call, or in the pending read's handler, which the io_context runs soon after).
  // Called once the worker has exited: all it wrote is in the pipe; later writers (its own
  // children) are not waited for.
  void Finish();
  // A terminal's new size (the window was resized); nothing for a pipe.
  void Resize(const TerminalSize& size);
  // Bytes read from the worker so far (--hang_progress=output counts them as progress).
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  void ReadSome();
  void FinishNow();
  void DrainAndClose();
  void Forward(std::string_view chunk);
  void WriteConsole(std::string_view bytes);
  // (Re)arms the partial-line deadline: kPartialLineDelay without more output from now.
  void SchedulePartialFlush();
  void Close();

  boost::asio::posix::stream_descriptor pipe_;
  const bool terminal_;
  boost::asio::steady_timer terminal_drain_;
  bool draining_terminal_ = false;
  std::shared_ptr<SharedConsole> shared_console_;
  const int console_fd_;
  int file_fd_;
  ConsoleStream console_;
  boost::asio::steady_timer partial_flush_;
  std::array<char, 64 * 1024> buffer_;
  bool reading_ = false;    // an async read is pending
  bool finishing_ = false;  // Finish() was called
  bool closed_ = false;
  uint64_t bytes_read_ = 0;
};

}  // namespace ddprun
