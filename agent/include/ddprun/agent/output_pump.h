// OutputPump: forwards one worker stream (stdout or stderr) from its pipe as it arrives.
// To the console, one whole line at a time with a prefix ("[rank3]: "), each line in a single
// write so lines of different workers never tear; to a log file, the bytes as written.
// Runs on the supervisor's io_context; not thread-safe. Keep it in a shared_ptr: pending reads
// hold a reference.
#pragma once

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <memory>
#include <string>

#include "ddprun/agent/line_splitter.h"

namespace ddprun {

class OutputPump : public std::enable_shared_from_this<OutputPump> {
 public:
  // Takes ownership of pipe_fd and file_fd (-1: no file). console_fd -1: no console output;
  // it is not owned.
  OutputPump(boost::asio::io_context& io, int pipe_fd, int console_fd, std::string prefix,
             int file_fd);
  ~OutputPump();

  // Starts reading asynchronously until end of stream or Finish().
  void Start();
  // Forwards whatever the pipe holds now without waiting for more, then closes everything
  // (on this call, or in the pending read's handler, which the io_context runs soon after).
  // Called once the worker has exited: all it wrote is in the pipe; later writers (its own
  // children) are not waited for.
  void Finish();

 private:
  void ReadSome();
  void DrainAndClose();
  void Forward(std::string_view chunk);
  void WriteConsoleLine(std::string_view line);
  void Close();

  boost::asio::posix::stream_descriptor pipe_;
  const int console_fd_;
  const std::string prefix_;
  int file_fd_;
  LineSplitter splitter_;
  std::array<char, 64 * 1024> buffer_;
  bool reading_ = false;    // an async read is pending
  bool finishing_ = false;  // Finish() was called
  bool closed_ = false;
};

}  // namespace ddprun
