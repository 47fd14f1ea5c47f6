// RemoteConsole: where the output of a job's hosts comes together on the submitter's stdout and
// stderr. Each host's agent has already put its ranks' prefixes on their lines and kept them from
// tearing; what is left is to keep one host from continuing a line another host left open (a
// partial line, a progress bar, or a line the relay cut in two). That line is ended with '\n'
// first, and when its host goes on, its rank prefix is written again. Thread-safe: each host's
// follower writes from its own thread.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "ddprun/base/thread_annotations.h"

namespace ddprun {

class RemoteConsole {
 public:
  RemoteConsole(int stdout_fd, int stderr_fd);

  // `data` of host `host`'s stream (0 stdout, 1 stderr).
  void Write(int host, int stream, std::string_view data) EXCLUDES(mu_);
  // A line of ddprun's own on stderr (with its '\n'), on a line of its own.
  void Note(const std::string& line) EXCLUDES(mu_);
  // The user ended a line typed at this terminal, which echoed it: the open line, if any, is
  // over (nothing is written; its host's next bytes start behind their prefix).
  void LineEnteredByUser() EXCLUDES(mu_);

 private:
  struct Source {
    std::string line;  // the start of its current line, up to 256 bytes (for its prefix)
    bool interrupted = false;
  };
  using SourceKey = std::pair<int, int>;  // host, stream
  void EndOpenLine(int fd, const SourceKey* writer) REQUIRES(mu_);

  const int fds_[2];
  const bool same_file_;  // stdout and stderr are one file (a terminal): one open line for both
  Mutex mu_;
  std::map<SourceKey, Source> sources_ GUARDED_BY(mu_);
  // Per console (index 0, or 1 for stderr when not the same file): whose line is open there.
  bool open_[2] GUARDED_BY(mu_) = {false, false};
  SourceKey open_source_[2] GUARDED_BY(mu_);
};

}  // namespace ddprun
