// OutputPump; see output_pump.h.
#include "ddprun/agent/output_pump.h"

#include <unistd.h>

#include "ddprun/base/files.h"

namespace ddprun {

OutputPump::OutputPump(boost::asio::io_context& io, int pipe_fd, int console_fd, std::string prefix,
                       int file_fd)
    : pipe_(io, pipe_fd), console_fd_(console_fd), prefix_(std::move(prefix)), file_fd_(file_fd) {
  pipe_.non_blocking(true);
}

OutputPump::~OutputPump() { Close(); }

void OutputPump::Start() { ReadSome(); }

void OutputPump::ReadSome() {
  reading_ = true;
  pipe_.async_read_some(
      boost::asio::buffer(buffer_),
      [self = shared_from_this()](const boost::system::error_code& error, size_t bytes) {
        self->reading_ = false;
        if (self->closed_) return;
        // Bytes of a read that completed before a cancel still count, and
        // come before whatever the drain reads.
        if (bytes > 0) self->Forward({self->buffer_.data(), bytes});
        if (self->finishing_) {
          self->DrainAndClose();
        } else if (error) {
          self->Close();  // end of stream, or the pipe failed
        } else {
          self->ReadSome();
        }
      });
}

void OutputPump::Forward(std::string_view chunk) {
  // Output errors (a full disk, a closed console) never stop the supervisor: they are dropped.
  if (file_fd_ >= 0) (void)WriteAll(file_fd_, chunk, "a worker's log file");
  if (console_fd_ < 0) return;
  splitter_.Append(chunk, [this](std::string_view line) { WriteConsoleLine(line); });
}

void OutputPump::WriteConsoleLine(std::string_view line) {
  std::string out;
  out.reserve(prefix_.size() + line.size() + 1);
  out.append(prefix_).append(line).push_back('\n');
  // One write: lines of different workers never interleave.
  (void)WriteAll(console_fd_, out, "the console");
}

void OutputPump::Finish() {
  if (closed_ || finishing_) return;
  finishing_ = true;
  if (!reading_) {
    DrainAndClose();
    return;
  }
  // The pending read's handler drains: it may already hold bytes that must go out first.
  boost::system::error_code ignored;
  pipe_.cancel(ignored);
}

void OutputPump::DrainAndClose() {
  boost::system::error_code error;
  while (true) {
    const size_t bytes = pipe_.read_some(boost::asio::buffer(buffer_), error);
    if (bytes > 0) Forward({buffer_.data(), bytes});
    if (error || bytes == 0) break;  // would block (drained), end of stream, or failure
  }
  Close();
}

void OutputPump::Close() {
  if (closed_) return;
  closed_ = true;
  if (console_fd_ >= 0) {
    splitter_.Flush([this](std::string_view line) { WriteConsoleLine(line); });
  }
  boost::system::error_code ignored;
  pipe_.close(ignored);
  if (file_fd_ >= 0) {
    ::close(file_fd_);
    file_fd_ = -1;
  }
}

}  // namespace ddprun
