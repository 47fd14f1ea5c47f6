// Locks the compiler checks: clang's thread-safety analysis (-Wthread-safety), as leveldb and
// Abseil use it. A member that a mutex guards is declared GUARDED_BY(mu_); a function that must
// be called with it held, REQUIRES(mu_). The annotations are empty for other compilers.
//
// ddprun::Mutex is std::mutex with the annotations the analysis needs (libstdc++'s has none);
// ddprun::MutexLock holds one for a scope and can be handed to std::condition_variable_any.
#pragma once

#include <mutex>

#if defined(__clang__)
#define DDPRUN_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define DDPRUN_THREAD_ANNOTATION(x)
#endif

// gRPC's headers bring absl's internal thread_annotations.h, which defines GUARDED_BY,
// PT_GUARDED_BY and NO_THREAD_SAFETY_ANALYSIS to the same attributes, unguarded. Whichever comes
// first defines them: absl's redefinition after these is in a system header, not reported, and
// these are skipped after absl's (an error otherwise, with -Werror).
#define CAPABILITY(x) DDPRUN_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY DDPRUN_THREAD_ANNOTATION(scoped_lockable)
#ifndef GUARDED_BY
#define GUARDED_BY(x) DDPRUN_THREAD_ANNOTATION(guarded_by(x))
#endif
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) DDPRUN_THREAD_ANNOTATION(pt_guarded_by(x))
#endif
#define REQUIRES(...) DDPRUN_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) DDPRUN_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) DDPRUN_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) DDPRUN_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS DDPRUN_THREAD_ANNOTATION(no_thread_safety_analysis)
#endif

namespace ddprun {

class CAPABILITY("mutex") Mutex {
 public:
  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

// Holds `mu` from construction to destruction. lock() and unlock() let a condition variable
// (std::condition_variable_any) release and retake it while waiting.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  Mutex& mu_;
};

}  // namespace ddprun
