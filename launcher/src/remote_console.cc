// RemoteConsole; see remote_console.h.
#include "remote_console.h"

#include <sys/stat.h>

#include "ddprun/base/files.h"

namespace ddprun {
namespace {

constexpr size_t kKeptLineStart = 256;

bool SameFile(int a, int b) {
  struct stat first = {};
  struct stat second = {};
  return ::fstat(a, &first) == 0 && ::fstat(b, &second) == 0 && first.st_dev == second.st_dev &&
         first.st_ino == second.st_ino;
}

// The rank prefix a line starts with ("[rank3]: "), or empty.
std::string_view PrefixOf(std::string_view line) {
  if (line.rfind("[rank", 0) != 0) return {};
  const size_t end = line.find("]: ");
  return end == std::string_view::npos ? std::string_view() : line.substr(0, end + 3);
}

}  // namespace

RemoteConsole::RemoteConsole(int stdout_fd, int stderr_fd)
    : fds_{stdout_fd, stderr_fd}, same_file_(SameFile(stdout_fd, stderr_fd)) {}

void RemoteConsole::EndOpenLine(int console, const SourceKey* writer) {
  if (!open_[console] || (writer != nullptr && open_source_[console] == *writer)) return;
  const int fd = fds_[open_source_[console].second];
  (void)WriteAll(fd, "\n", "the console");
  sources_[open_source_[console]].interrupted = true;
  open_[console] = false;
}

void RemoteConsole::Write(int host, int stream, std::string_view data) {
  if (data.empty()) return;
  MutexLock lock(mu_);
  const SourceKey key{host, stream};
  const int console = same_file_ ? 0 : stream;
  EndOpenLine(console, &key);
  Source& source = sources_[key];
  if (source.interrupted) {
    source.interrupted = false;
    if (data.front() == '\n') {
      data.remove_prefix(1);  // the end of the line that was ended already
      source.line.clear();
    } else {
      const std::string_view prefix = PrefixOf(source.line);
      (void)WriteAll(fds_[stream], prefix, "the console");
    }
  }
  (void)WriteAll(fds_[stream], data, "the console");
  const size_t last_newline = data.rfind('\n');
  if (last_newline == std::string_view::npos) {
    if (source.line.size() < kKeptLineStart) {
      source.line.append(data.substr(0, kKeptLineStart - source.line.size()));
    }
  } else {
    source.line.assign(data.substr(last_newline + 1, kKeptLineStart));
  }
  const bool line_open = !data.empty() && data.back() != '\n';
  if (line_open) {
    open_[console] = true;
    open_source_[console] = key;
  } else if (open_[console] && open_source_[console] == key) {
    open_[console] = false;
  }
}

void RemoteConsole::LineEnteredByUser() {
  MutexLock lock(mu_);
  for (int console = 0; console < 2; ++console) {
    if (!open_[console]) continue;
    sources_[open_source_[console]].interrupted = true;
    open_[console] = false;
  }
}

void RemoteConsole::Note(const std::string& line) {
  MutexLock lock(mu_);
  EndOpenLine(same_file_ ? 0 : 1, nullptr);
  (void)WriteAll(fds_[1], line, "the console");
}

}  // namespace ddprun
