// SharedConsole; see shared_console.h.
#include "ddprun/agent/shared_console.h"

#include <sys/stat.h>

#include "ddprun/base/files.h"

namespace ddprun {

std::pair<std::shared_ptr<SharedConsole>, std::shared_ptr<SharedConsole>> SharedConsole::For(
    int stdout_fd, int stderr_fd) {
  auto out = std::make_shared<SharedConsole>();
  struct stat out_info {
  }, err_info{};
  const bool same = ::fstat(stdout_fd, &out_info) == 0 && ::fstat(stderr_fd, &err_info) == 0 &&
                    out_info.st_dev == err_info.st_dev && out_info.st_ino == err_info.st_ino;
  return {out, same ? out : std::make_shared<SharedConsole>()};
}

void SharedConsole::Write(int fd, ConsoleStream& writer, std::string_view bytes) {
  if (open_ != nullptr && open_ != &writer) {
    (void)WriteAll(open_fd_, "\n", "the console");
    open_->Interrupt();
    open_ = nullptr;
  }
  (void)WriteAll(fd, bytes, "the console");
  if (writer.line_open()) {
    open_ = &writer;
    open_fd_ = fd;
  } else if (open_ == &writer) {
    open_ = nullptr;
  }
}

void SharedConsole::LineEnteredByUser() {
  if (open_ == nullptr) return;
  open_->Interrupt();
  open_ = nullptr;
}

void SharedConsole::Forget(const ConsoleStream& stream) {
  if (open_ == &stream) open_ = nullptr;
}

}  // namespace ddprun
