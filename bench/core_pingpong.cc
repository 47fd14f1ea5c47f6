// core-pingpong: the round trip of one cache line between two CPUs, the cost under every hand-off
// of the shared-memory collectives. Two threads, pinned to the first two CPUs this process may
// run on, pass one atomic counter back and forth. Prints the median of 5 runs of 100,000 round
// trips, in nanoseconds:
//   core-pingpong cpus=0,1 rtt_ns=92
// bench/allreduce.py prints it beside its figures: on this machine the same build's direct
// all-reduce differs by 5x between a round trip near 100 ns and one near 400 ns (bench/RESULTS.md).
// Exits 1 with a message where fewer than two CPUs are available.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

constexpr int kRoundTrips = 100000;
constexpr int kRuns = 5;

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

// Nanoseconds per round trip: this thread writes odd values, the other answers with the next
// even one. The counter has a cache line to itself.
double MeasureRoundTrip(int here, int there) {
  alignas(64) std::atomic<int> counter{0};
  std::thread answerer([&] {
    PinTo(there);
    for (int i = 0; i < kRoundTrips; ++i) {
      while (counter.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      counter.store(2 * i + 2, std::memory_order_release);
    }
  });
  PinTo(here);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRoundTrips; ++i) {
    counter.store(2 * i + 1, std::memory_order_release);
    while (counter.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  const auto elapsed = std::chrono::steady_clock::now() - start;
  answerer.join();
  return std::chrono::duration<double, std::nano>(elapsed).count() / kRoundTrips;
}

}  // namespace

int main() {
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    std::perror("core-pingpong: sched_getaffinity");
    return 1;
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  }
  if (cpus.size() < 2) {
    std::fprintf(stderr, "core-pingpong: needs two CPUs, this process may run on one\n");
    return 1;
  }
  std::vector<double> runs;
  for (int run = 0; run < kRuns; ++run) runs.push_back(MeasureRoundTrip(cpus[0], cpus[1]));
  std::nth_element(runs.begin(), runs.begin() + kRuns / 2, runs.end());
  std::printf("core-pingpong cpus=%d,%d rtt_ns=%.0f\n", cpus[0], cpus[1], runs[kRuns / 2]);
  return 0;
}
