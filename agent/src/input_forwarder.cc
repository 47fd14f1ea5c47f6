// InputForwarder; see input_forwarder.h.
#include "ddprun/agent/input_forwarder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/write.hpp>

namespace ddprun {

bool InputForwarder::CanForward(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) return false;
  return S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode) || ::isatty(fd) == 1;
}

InputForwarder::InputForwarder(boost::asio::io_context& io, int source_fd,
                               std::function<void()> line_entered)
    : io_(io),
      source_(io, ::fcntl(source_fd, F_DUPFD_CLOEXEC, 0)),
      line_entered_(::isatty(source_fd) == 1 ? std::move(line_entered) : nullptr),
      retry_(io) {
  boost::system::error_code ignored;
  source_.non_blocking(true, ignored);
  Read();
}

void InputForwarder::SetTarget(int fd, bool terminal) {
  ++generation_;
  writing_ = false;
  target_.reset();
  line_open_ = false;
  if (fd < 0 || stopped_) {
    if (fd >= 0) ::close(fd);
    return;
  }
  target_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fd);
  target_terminal_ = terminal;
  if (source_ended_ && held_.empty()) {
    DeliverEnd();
  } else {
    Forward();
  }
}

void InputForwarder::Stop() {
  if (stopped_) return;
  stopped_ = true;
  ++generation_;
  target_.reset();
  boost::system::error_code ignored;
  retry_.cancel();
  source_.close(ignored);
}

void InputForwarder::Read() {
  if (stopped_ || reading_ || source_ended_ || !held_.empty()) return;
  reading_ = true;
  source_.async_read_some(
      boost::asio::buffer(buffer_), [this](const boost::system::error_code& error, size_t bytes) {
        reading_ = false;
        if (stopped_) return;
        held_.append(buffer_, bytes);
        if (line_entered_ && std::string_view(buffer_, bytes).find('\n') != std::string::npos) {
          line_entered_();
        }
        if (error == boost::asio::error::eof) {
          source_ended_ = true;
        } else if (error) {
          // EIO: the terminal's background job (SIGTTIN is ignored); try again later. Other
          // failures end the input as end of file does.
          if (error.value() != EIO) {
            source_ended_ = true;
          } else {
            retry_.expires_after(kBackgroundRetry);
            retry_.async_wait([this](const boost::system::error_code& cancelled) {
              if (!cancelled) Read();
            });
          }
        }
        Forward();
        if (!error) Read();
      });
}

void InputForwarder::Forward() {
  if (stopped_ || !target_ || writing_) return;
  if (held_.empty()) {
    if (source_ended_) DeliverEnd();
    return;
  }
  writing_ = true;
  const int generation = generation_;
  boost::asio::async_write(
      *target_, boost::asio::buffer(held_),
      [this, generation](const boost::system::error_code& error, size_t) {
        if (generation != generation_) return;  // the target changed meanwhile
        writing_ = false;
        if (error) {
          target_.reset();  // the worker closed its input or exited: what it did not take is lost
        } else {
          line_open_ = held_.back() != '\n';
        }
        held_.clear();
        if (source_ended_) {
          Forward();
        } else {
          Read();
        }
      });
}

void InputForwarder::DeliverEnd() {
  if (!target_) return;
  if (!target_terminal_) {
    target_.reset();  // the pipe's end: end of file for the worker
    return;
  }
  // A terminal's end-of-file character ends a read; at the start of a line it reads as end of
  // file, so a line still open needs two.
  held_ = line_open_ ? "\x04\x04" : "\x04";
  source_ended_ = true;
  writing_ = true;
  const int generation = generation_;
  boost::asio::async_write(*target_, boost::asio::buffer(held_),
                           [this, generation](const boost::system::error_code&, size_t) {
                             if (generation != generation_) return;
                             writing_ = false;
                             held_.clear();
                             target_.reset();
                           });
}

}  // namespace ddprun
