// SharedMapping; see shared_mapping.h.
#include "transport/shared_mapping.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "ddprun/base/logging.h"
#include "ddprun/base/thread_annotations.h"

namespace ddp::cpu {
namespace {

// Removes a name, logging a failure (there is nothing to return it to). ENOENT is fine: the
// name may have been removed already.
void RemoveName(const std::string& name) {
  if (::shm_unlink(name.c_str()) == 0 || errno == ENOENT) return;
  const int error = errno;
  ddprun::GetLogger("runtime")->error(
      "{}", ddprun::ErrnoError("removing shared memory " + name, error).message());
}

// The mappings this process created that still exist, by name (see the header).
ddprun::Mutex created_mu;
std::map<std::string, std::weak_ptr<SharedMapping>> created_mappings GUARDED_BY(created_mu);

}  // namespace

ddprun::Result<std::shared_ptr<SharedMapping>> SharedMapping::Create(const std::string& name,
                                                                     size_t bytes, bool reserve) {
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ddprun::ErrnoError("creating shared memory " + name, errno);
  auto fail = [&](const std::string& doing, int error) {
    ::close(fd);
    RemoveName(name);
    ddprun::Status status = ddprun::ErrnoError(doing + " shared memory " + name, error);
    if (error == ENOSPC || error == ENOMEM) {
      status = ddprun::ResourceExhaustedError(status.message() + " (is /dev/shm full? it needs " +
                                              std::to_string(bytes >> 20) + " MiB more)");
    }
    return status;
  };
  if (::ftruncate(fd, static_cast<off_t>(bytes)) != 0) return fail("sizing", errno);
  if (reserve && bytes > 0) {
    // posix_fallocate returns the error instead of setting errno.
    if (int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes)); error != 0) {
      return fail("reserving", error);
    }
  }
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) return fail("mapping", errno);
  ::close(fd);
  std::shared_ptr<SharedMapping> mapping(new SharedMapping(name, memory, bytes, true));
  ddprun::MutexLock lock(created_mu);
  std::erase_if(created_mappings, [](const auto& entry) { return entry.second.expired(); });
  created_mappings[name] = mapping;
  return mapping;
}

ddprun::Result<std::shared_ptr<SharedMapping>> SharedMapping::Open(const std::string& name,
                                                                   size_t min_bytes) {
  std::shared_ptr<SharedMapping> mapping;
  {
    ddprun::MutexLock lock(created_mu);
    if (auto it = created_mappings.find(name); it != created_mappings.end()) {
      mapping = it->second.lock();
    }
  }
  if (!mapping) {
    const int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0) return ddprun::ErrnoError("opening shared memory " + name, errno);
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
      const int error = errno;
      ::close(fd);
      return ddprun::ErrnoError("reading the size of shared memory " + name, error);
    }
    const auto bytes = static_cast<size_t>(info.st_size);
    void* memory =
        bytes == 0 ? nullptr : ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int error = errno;
    ::close(fd);
    if (memory == MAP_FAILED) return ddprun::ErrnoError("mapping shared memory " + name, error);
    mapping.reset(new SharedMapping(name, memory, bytes, false));
  }
  if (mapping->bytes() < min_bytes) {
    return ddprun::InternalError("shared memory " + name + " holds " +
                                 std::to_string(mapping->bytes()) + " bytes, not the " +
                                 std::to_string(min_bytes) + " its creator announced");
  }
  return mapping;
}

void SharedMapping::Unlink() { RemoveName(name_); }

SharedMapping::~SharedMapping() {
  if (data_ != nullptr && ::munmap(data_, bytes_) != 0) {
    const int error = errno;
    ddprun::GetLogger("runtime")->error(
        "{}", ddprun::ErrnoError("unmapping shared memory " + name_, error).message());
  }
  if (owner_) RemoveName(name_);
}

}  // namespace ddp::cpu
