// SharedConsole: the console every worker stream writes to (ddprun's stdout and stderr, one
// object for both when they are the same file, a terminal for instance). It keeps one stream
// from continuing a line another stream left open (a partial line, a progress bar): that line is
// ended with '\n' first and its stream starts its next line anew, behind its prefix. So lines of
// different workers never tear, though partial lines go out at once. Not thread-safe: the
// supervisor's thread writes the console.
#pragma once

#include <memory>
#include <string_view>

#include "ddprun/agent/console_stream.h"

namespace ddprun {

class SharedConsole {
 public:
  // The consoles of ddprun's stdout and stderr: one shared object when both descriptors are
  // the same file, otherwise one each.
  static std::pair<std::shared_ptr<SharedConsole>, std::shared_ptr<SharedConsole>> For(
      int stdout_fd, int stderr_fd);

  // Writes `bytes` of `writer`'s stream to `fd` (errors are dropped: a closed console never
  // stops the supervisor).
  void Write(int fd, ConsoleStream& writer, std::string_view bytes);
  // `stream` is going away.
  void Forget(const ConsoleStream& stream);
  // The user ended a line they typed at this terminal, which echoed it: the cursor is at the
  // start of a new line, so the open line, if any, is over (nothing is written).
  void LineEnteredByUser();

 private:
  ConsoleStream* open_ = nullptr;  // the stream whose line is open, if any
  int open_fd_ = -1;               // where that line is
};

}  // namespace ddprun
