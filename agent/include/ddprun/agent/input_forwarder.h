// InputForwarder: copies this process's stdin (a terminal, a pipe or a socket) to the input of
// one worker at a time (srun's default: task 0's; ddprun's: global rank 0's), so that input typed
// at ddprun, or piped into it, reaches that worker: pdb and breakpoint() on rank 0 work.
//
// Input read while no worker takes it (between attempts) waits for the next one, and reading
// pauses meanwhile, so memory stays bounded. At the end of input a pipe is closed; a terminal
// gets its end-of-file character instead. Run in the background of its terminal (ddprun &),
// ddprun cannot read it (SIGTTIN is ignored, so the read fails): it tries again every
// kBackgroundRetry until it is in the foreground. Runs on the supervisor's io_context; not
// thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace ddprun {

class InputForwarder {
 public:
  static constexpr std::chrono::milliseconds kBackgroundRetry{500};

  // Whether `fd` can be forwarded (read as it arrives): a terminal, a pipe or a socket. A file
  // or /dev/null is better given to the worker itself.
  static bool CanForward(int fd);

  // Reads a duplicate of `source_fd`, which stays open. When it is a terminal, `line_entered`
  // runs for each line passed on (the terminal echoed it: the console's cursor is on a new line).
  InputForwarder(boost::asio::io_context& io, int source_fd, std::function<void()> line_entered);
  InputForwarder(const InputForwarder&) = delete;
  InputForwarder& operator=(const InputForwarder&) = delete;

  // From now on input goes to `fd` (owned; -1: to nobody, held); `terminal`: fd is a terminal's
  // master. The previous target is closed.
  void SetTarget(int fd, bool terminal);
  // Stops reading and closes everything; pending handlers do nothing after it.
  void Stop();

 private:
  void Read();
  void Forward();
  // Tells the target the input has ended.
  void DeliverEnd();

  boost::asio::io_context& io_;
  boost::asio::posix::stream_descriptor source_;
  std::function<void()> line_entered_;  // empty unless the source is a terminal
  std::unique_ptr<boost::asio::posix::stream_descriptor> target_;
  bool target_terminal_ = false;
  int generation_ = 0;  // bumped by SetTarget and Stop: older handlers are stale
  boost::asio::steady_timer retry_;
  std::string held_;  // read, not written yet
  char buffer_[4096];
  bool reading_ = false;
  bool writing_ = false;
  bool source_ended_ = false;
  bool line_open_ = false;  // the last byte written to the target was not '\n'
  bool stopped_ = false;
};

}  // namespace ddprun
