// cross-process-copy: how fast can two processes on this host move a large buffer between them
// without a shared-memory ring? Measures, with both processes working at once on 64 MiB float32
// buffers (or the size given in bytes):
//   memcpy   each copies half its own buffer (the memory system's pace for one pass)
//   cma      each reads the other's half with process_vm_readv (one kernel copy, no ring)
//   direct   a whole 2-rank all-reduce by cma: each reduces its half reading the peer's in
//            256 KiB pieces, then reads the peer's reduced half; busbw as nccl-tests counts it
// Prints the median of 10 runs of each. Not a test: an experiment behind bench/RESULTS.md.
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace {

// What both processes share: a two-party barrier and each one's pid and buffer address.
struct Shared {
  std::atomic<int> arrived[2];
  pid_t pid[2];
  float* buffer[2];
};

void Barrier(Shared& shared, int rank, int& generation) {
  ++generation;
  shared.arrived[rank].store(generation, std::memory_order_release);
  while (shared.arrived[1 - rank].load(std::memory_order_acquire) < generation) {
  }
}

// Reads `bytes` at `remote` in process `pid` into `local`. Exits on failure.
void ReadPeer(pid_t pid, void* local, const void* remote, size_t bytes) {
  iovec to{local, bytes};
  iovec from{const_cast<void*>(remote), bytes};
  if (process_vm_readv(pid, &to, 1, &from, 1, 0) != static_cast<ssize_t>(bytes)) {
    std::perror("process_vm_readv");
    std::exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (64u << 20);
  const size_t count = bytes / sizeof(float);
  const size_t half = count / 2;
  auto* shared = static_cast<Shared*>(
      mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  const int rank = fork() == 0 ? 1 : 0;
  const int peer = 1 - rank;
  std::vector<float> buffer(count, 1.0f + static_cast<float>(rank));
  std::vector<float> other(half);
  std::vector<float> piece(64 << 10);  // 256 KiB: stays in cache while it is reduced
  shared->pid[rank] = getpid();
  shared->buffer[rank] = buffer.data();
  int generation = 0;
  Barrier(*shared, rank, generation);

  auto median_ms = [&](const std::function<void()>& run) {
    std::vector<double> ms;
    for (int i = 0; i < 10; ++i) {
      Barrier(*shared, rank, generation);
      const auto start = std::chrono::steady_clock::now();
      run();
      Barrier(*shared, rank, generation);
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const double copy =
      median_ms([&] { std::memcpy(other.data(), buffer.data() + half, half * sizeof(float)); });
  const double cma = median_ms([&] {
    ReadPeer(shared->pid[peer], other.data(), shared->buffer[peer] + rank * half,
             half * sizeof(float));
  });
  const double direct = median_ms([&] {
    float* mine = buffer.data() + rank * half;
    const float* theirs = shared->buffer[peer] + rank * half;
    for (size_t at = 0; at < half; at += piece.size()) {
      const size_t n = std::min(piece.size(), half - at);
      ReadPeer(shared->pid[peer], piece.data(), theirs + at, n * sizeof(float));
      for (size_t i = 0; i < n; ++i) mine[at + i] += piece[i];
    }
    Barrier(*shared, rank, generation);
    ReadPeer(shared->pid[peer], buffer.data() + peer * half, shared->buffer[peer] + peer * half,
             half * sizeof(float));
  });
  if (rank == 0) {
    const double half_gb = static_cast<double>(half * sizeof(float)) / 1e9;
    std::printf(
        "bytes=%zu memcpy_half_ms=%.2f (%.2f GB/s) cma_half_ms=%.2f (%.2f GB/s) "
        "direct_allreduce_ms=%.2f busbw=%.2f GB/s\n",
        bytes, copy, half_gb / (copy / 1e3), cma, half_gb / (cma / 1e3), direct,
        static_cast<double>(bytes) / 1e9 / (direct / 1e3));
    wait(nullptr);
  }
  return 0;
}
