// OutputPump; see output_pump.h.
#include "ddprun/agent/output_pump.h"

#include <unistd.h>

#include "ddprun/base/files.h"

namespace ddprun {

OutputPump::OutputPump(boost::asio::io_context& io, int pipe_fd, bool terminal,
                       std::shared_ptr<SharedConsole> console, int console_fd, std::string prefix,
                       int file_fd)
    : pipe_(io, pipe_fd),
      terminal_(terminal),
      terminal_drain_(io),
      shared_console_(std::move(console)),
      console_fd_(console_fd),
      file_fd_(file_fd),
      console_(std::move(prefix)),
      partial_flush_(io) {
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
  bytes_read_ += chunk.size();
  // Output errors (a full disk, a closed console) never stop the supervisor: they are dropped.
  if (file_fd_ >= 0) (void)WriteAll(file_fd_, chunk, "a worker's log file");
  if (console_fd_ < 0) return;
  console_.Append(chunk, [this](std::string_view bytes) { WriteConsole(bytes); });
  if (console_.holds_partial()) SchedulePartialFlush();
}

void OutputPump::WriteConsole(std::string_view bytes) {
  shared_console_->Write(console_fd_, console_, bytes);
}

void OutputPump::SchedulePartialFlush() {
  partial_flush_.expires_after(kPartialLineDelay);  // cancels the wait before, if any
  partial_flush_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (error || self->closed_) return;
    self->console_.FlushPartial([&](std::string_view bytes) { self->WriteConsole(bytes); });
  });
}

void OutputPump::Finish() {
  if (closed_ || finishing_ || draining_terminal_) return;
  if (!terminal_) return FinishNow();
  // Reads go on until the terminal reports its end (EIO, once every holder of its other end is
  // gone) or the drain time passes.
  draining_terminal_ = true;
  terminal_drain_.expires_after(kTerminalDrain);
  terminal_drain_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error) self->FinishNow();
  });
}

void OutputPump::Resize(const TerminalSize& size) {
  if (terminal_ && !closed_) (void)ResizeTerminal(pipe_.native_handle(), size);
}

void OutputPump::FinishNow() {
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
    console_.Finish([this](std::string_view bytes) { WriteConsole(bytes); });
    shared_console_->Forget(console_);
  }
  boost::system::error_code ignored;
  partial_flush_.cancel();
  terminal_drain_.cancel();
  pipe_.close(ignored);
  if (file_fd_ >= 0) {
    ::close(file_fd_);
    file_fd_ = -1;
  }
}

}  // namespace ddprun
