// ProgressPageMapping; see progress_page.h.
#include "ddprun/base/progress_page.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

constexpr size_t kPageBytes = 4096;
static_assert(sizeof(ProgressPage) <= kPageBytes);

Result<ProgressPage*> MapPage(int fd) {
  void* address = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) return ErrnoError("mapping the progress page", errno);
  return static_cast<ProgressPage*>(address);
}

}  // namespace

ProgressPageMapping::~ProgressPageMapping() {
  if (page_ != nullptr) ::munmap(page_, kPageBytes);
  if (owned_fd_ >= 0) ::close(owned_fd_);
}

ProgressPageMapping::ProgressPageMapping(ProgressPageMapping&& other) noexcept
    : page_(std::exchange(other.page_, nullptr)), owned_fd_(std::exchange(other.owned_fd_, -1)) {}

ProgressPageMapping& ProgressPageMapping::operator=(ProgressPageMapping&& other) noexcept {
  if (this != &other) {
    ProgressPageMapping gone(std::move(*this));
    page_ = std::exchange(other.page_, nullptr);
    owned_fd_ = std::exchange(other.owned_fd_, -1);
  }
  return *this;
}

Result<ProgressPageMapping> ProgressPageMapping::Create() {
  const int created = ::memfd_create("ddprun-progress", MFD_CLOEXEC);
  if (created < 0) return ErrnoError("creating a progress page (memfd_create)", errno);
  const int fd = ::fcntl(created, F_DUPFD_CLOEXEC, 10);
  const int dup_error = errno;
  ::close(created);
  if (fd < 0) return ErrnoError("numbering the progress page's descriptor", dup_error);
  ProgressPageMapping mapping;
  mapping.owned_fd_ = fd;
  if (::ftruncate(fd, kPageBytes) != 0) return ErrnoError("sizing the progress page", errno);
  ASSIGN_OR_RETURN(ProgressPage * page, MapPage(fd));
  mapping.page_ = page;
  // A fresh memfd reads as zeros: the counters start at 0.
  page->step.store(-1, std::memory_order_relaxed);
  page->magic = ProgressPage::kMagic;
  return mapping;
}

Result<ProgressPageMapping> ProgressPageMapping::Map(int fd) {
  struct stat about {};
  if (::fstat(fd, &about) != 0) return ErrnoError("the progress page's descriptor", errno);
  if (about.st_size < static_cast<off_t>(kPageBytes)) {
    return InvalidArgumentError("descriptor " + std::to_string(fd) + " is not a progress page");
  }
  ProgressPageMapping mapping;
  ASSIGN_OR_RETURN(mapping.page_, MapPage(fd));
  if (mapping.page_->magic != ProgressPage::kMagic) {
    return InvalidArgumentError("descriptor " + std::to_string(fd) + " is not a progress page");
  }
  return mapping;
}

}  // namespace ddprun
