// The run's timeline; see timeline.h.
#include "ddprun/base/timeline.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ddprun::timeline {
namespace {

struct Entry {
  const char* what;
  long number;
  timespec at;
};

constexpr int kCapacity = 256;

std::atomic<bool> enabled{false};
timespec began{};
double cpu_before_main_ms = 0;
Entry entries[kCapacity];
std::atomic<int> used{0};
std::atomic<bool> printed{false};

double Milliseconds(const timespec& from, const timespec& to) {
  return static_cast<double>(to.tv_sec - from.tv_sec) * 1e3 +
         static_cast<double>(to.tv_nsec - from.tv_nsec) / 1e6;
}

}  // namespace

void Begin() {
  const char* setting = std::getenv("DDPRUN_TIMELINE");
  if (setting == nullptr || std::strcmp(setting, "1") != 0) return;
  timespec cpu{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
  cpu_before_main_ms = Milliseconds(timespec{}, cpu);
  ::clock_gettime(CLOCK_MONOTONIC, &began);
  enabled.store(true, std::memory_order_release);
}

void Note(const char* what, long number) {
  if (!enabled.load(std::memory_order_acquire)) return;
  const int index = used.fetch_add(1, std::memory_order_relaxed);
  if (index >= kCapacity) return;
  Entry& entry = entries[index];
  entry.what = what;
  entry.number = number;
  ::clock_gettime(CLOCK_MONOTONIC, &entry.at);
}

void Print() {
  if (!enabled.load(std::memory_order_acquire) || printed.exchange(true)) return;
  const int count = std::min(used.load(), kCapacity);
  std::fprintf(stderr, "ddprun: timeline: %.2f ms of CPU before main\n", cpu_before_main_ms);
  for (int i = 0; i < count; ++i) {
    const Entry& entry = entries[i];
    if (entry.number >= 0) {
      std::fprintf(stderr, "ddprun: timeline: +%.3f ms %s %ld\n", Milliseconds(began, entry.at),
                   entry.what, entry.number);
    } else {
      std::fprintf(stderr, "ddprun: timeline: +%.3f ms %s\n", Milliseconds(began, entry.at),
                   entry.what);
    }
  }
  if (used.load() > kCapacity) {
    std::fprintf(stderr, "ddprun: timeline: %d later notes were not kept\n",
                 used.load() - kCapacity);
  }
}

}  // namespace ddprun::timeline
