// Files as every component writes and reads them: directories made with their parents, writes
// that finish or fail as a whole, files replaced atomically, small files read with a bound.
// Errors are INTERNAL (or NOT_FOUND) and name the path and the system's reason.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

// Creates `path` and its missing parents (mode 0755 less the umask). OK when it exists.
Status CreateDirectories(const std::string& path);

// Writes all of `data` to `fd`, retrying short writes and EINTR; on a non-blocking descriptor
// waits (at most 10 s per stall) for it to take more. `what` names the file in the error.
Status WriteAll(int fd, std::string_view data, const std::string& what);

// Replaces `path` with `bytes` so that a crash leaves the old content or the new, never a part:
// a temporary file beside it, fsync, rename over `path`, fsync of the directory. On failure the
// temporary is removed and `path` is untouched.
Status WriteFileAtomically(const std::string& path, std::string_view bytes, mode_t mode = 0644);

// At most `limit` bytes from the start of `path`. NOT_FOUND when it does not exist.
Result<std::string> ReadFileHead(const std::string& path, size_t limit);

// The process ids listed in a file of the kernel's (cgroup.procs, /proc/PID/task/TID/children),
// separated by white space; empty when it cannot be read. Read without a stream: these are read
// on the way to a launch's first worker and at its end.
std::vector<pid_t> ReadPidList(const std::string& path);

// The whole of a file the user names (a token, a host file, a configuration file), which may be
// anything: at most `limit` bytes. INVALID_ARGUMENT, one line naming `what` and the path, when
// it cannot be read ("cannot read --hostfile /x: No such file or directory") or holds more than
// `limit` bytes, as a device like /dev/zero does ("--hostfile /dev/zero is larger than 16 MiB").
// A pipe is read to its end (`--hostfile <(...)`), so one whose writer never closes it blocks.
Result<std::string> ReadUserFile(const std::string& what, const std::string& path, size_t limit);

}  // namespace ddprun
