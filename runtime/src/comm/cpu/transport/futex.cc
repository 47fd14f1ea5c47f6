// Futex waits and wakes; see futex.h.
#include "transport/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace ddp::cpu {

void FutexWake(std::atomic<uint32_t>& word, int waiters) {
  // Its result is not checked: it fails only for a bad address or operation (EFAULT, EINVAL),
  // and these are a mapped word and FUTEX_WAKE.
  (void)::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE, waiters, nullptr,
                  nullptr, 0);
}

ddprun::Status FutexWait(std::atomic<uint32_t>& word, uint32_t expected,
                         std::chrono::milliseconds slice, const char* what) {
  timespec timeout{static_cast<time_t>(slice.count() / 1000),
                   static_cast<long>(slice.count() % 1000) * 1'000'000};
  if (::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT, expected, &timeout,
                nullptr, 0) == 0) {
    return ddprun::Status::Ok();
  }
  const int error = errno;
  if (error == EAGAIN || error == ETIMEDOUT || error == EINTR) return ddprun::Status::Ok();
  return ddprun::ErrnoError(std::string("futex wait on ") + what, error);
}

}  // namespace ddp::cpu
