// File helpers; see files.h.
#include "ddprun/base/files.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <variant>

#include "ddprun/base/parsing.h"

namespace ddprun {
namespace {

// Closes a descriptor on every path out of a function.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting what close says (a write error can surface only here on NFS).
  Status Close(const std::string& what) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return ErrnoError("closing " + what, errno);
    return Status::Ok();
  }

 private:
  int fd_;
};

std::string DirectoryOf(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

Status CreateDirectories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) return InternalError("cannot create directory " + path + ": " + error.message());
  return Status::Ok();
}

Status WriteAll(int fd, std::string_view data, const std::string& what) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {  // a non-blocking descriptor we inherited: wait, bounded
      pollfd writable{fd, POLLOUT, 0};
      if (::poll(&writable, 1, 10'000) > 0) continue;
      return InternalError("writing " + what + ": it took nothing for 10 s");
    }
    return ErrnoError("writing " + what, n == 0 ? EIO : errno);
  }
  return Status::Ok();
}

Status WriteFileAtomically(const std::string& path, std::string_view bytes, mode_t mode) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  FileDescriptor file(::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (file.get() < 0) return ErrnoError("creating " + temporary, errno);
  Status written = WriteAll(file.get(), bytes, temporary);
  if (written.ok() && ::fsync(file.get()) != 0)
    written = ErrnoError("fsync of " + temporary, errno);
  if (Status closed = file.Close(temporary); written.ok()) written = closed;
  if (written.ok() && std::rename(temporary.c_str(), path.c_str()) != 0) {
    written = ErrnoError("renaming " + temporary + " to " + path, errno);
  }
  if (!written.ok()) {
    ::unlink(temporary.c_str());
    return written;
  }
  // The rename is durable only once the directory is.
  const std::string directory = DirectoryOf(path);
  FileDescriptor dir(::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir.get() < 0) return ErrnoError("opening directory " + directory + " to fsync it", errno);
  if (::fsync(dir.get()) != 0) return ErrnoError("fsync of directory " + directory, errno);
  return dir.Close(directory);
}

namespace {

// At most `limit` bytes from `fd`; an errno value when a read fails. Grown as it is read:
// `limit` bounds the read, it is not allocated up front.
std::variant<std::string, int> ReadAtMost(int fd, size_t limit) {
  std::string text;
  char chunk[64 << 10];
  while (text.size() < limit) {
    const ssize_t n = ::read(fd, chunk, std::min(sizeof(chunk), limit - text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  return text;
}

// "16 MiB", "64 KiB", "100 bytes".
std::string SizeText(size_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

Result<std::string> ReadFileHead(const std::string& path, size_t limit) {
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) {
    if (errno == ENOENT) return NotFoundError(path + " does not exist");
    return ErrnoError("opening " + path, errno);
  }
  auto text = ReadAtMost(file.get(), limit);
  if (const int* error = std::get_if<int>(&text)) return ErrnoError("reading " + path, *error);
  return std::get<std::string>(std::move(text));
}

std::vector<pid_t> ReadPidList(const std::string& path) {
  std::vector<pid_t> pids;
  auto text = ReadFileHead(path, 4 << 20);
  if (!text.ok()) return pids;
  for (size_t at = text->find_first_not_of(" \n"); at != std::string::npos;
       at = text->find_first_not_of(" \n", at)) {
    const size_t end = std::min(text->find_first_of(" \n", at), text->size());
    if (auto pid = ParseInteger<pid_t>(std::string_view(*text).substr(at, end - at), 1)) {
      pids.push_back(*pid);
    }
    at = end;
  }
  return pids;
}

Result<std::string> ReadUserFile(const std::string& what, const std::string& path, size_t limit) {
  const auto cannot_read = [&](int error) {
    return InvalidArgumentError("cannot read " + what + " " + path + ": " + std::strerror(error));
  };
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) return cannot_read(errno);
  auto text = ReadAtMost(file.get(), limit + 1);
  if (const int* error = std::get_if<int>(&text)) return cannot_read(*error);
  if (std::get<std::string>(text).size() > limit) {
    return InvalidArgumentError(what + " " + path + " is larger than " + SizeText(limit));
  }
  return std::get<std::string>(std::move(text));
}

}  // namespace ddprun
