// ddp-allreduce-bench: the all-reduce table of nccl-tests' all_reduce_perf for ddprun's runtime,
// run under ddprun (every rank runs it; rank 0 prints):
//
//   ddprun --standalone --nproc_per_node=2 build/bin/ddp-allreduce-bench [MIN_BYTES MAX_BYTES
//                                                                            [registered]]
//
// Columns as nccl-tests: size (B), count (elements), type, time (us), algbw and busbw (GB/s;
// busbw = algbw x 2(n-1)/n), #wrong (elements differing from the expected sum after the timed
// iterations). float32, sum, in place; sizes from MIN_BYTES to MAX_BYTES by x4 (4 KiB to 64 MiB
// by default). DDPRUN_CPU_TRANSPORT=tcp measures the TCP transport on one host. `registered`:
// the buffer is a registered one (Communicator::AllocateShared), which ranks on one host reduce
// by reading each other's memory directly; otherwise it is ordinary memory, and goes through
// the ring.
//
// A last column, memcpy, is the machine's own limit at that size: the bandwidth of one memcpy of
// the buffer on every rank at once (between barriers). An all-reduce moves at least that much
// memory per rank, so its busbw cannot exceed it by much on a host whose ranks share memory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ddp/process_group.h"

namespace {

// Seconds per memcpy of `data` into a second buffer, every rank copying at the same time.
double ConcurrentCopySeconds(ddp::Communicator& comm, std::span<const float> data,
                             size_t iterations) {
  std::vector<float> copy(data.size());
  std::memcpy(copy.data(), data.data(), data.size() * sizeof(float));  // first touch
  (void)comm.Barrier();
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < iterations; ++i) {
    std::memcpy(copy.data(), data.data(), data.size() * sizeof(float));
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
      static_cast<double>(iterations);
  (void)comm.Barrier();
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t min_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
  const size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (64u << 20);
  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::fprintf(stderr, "ddp-allreduce-bench: %s\n", group.status().message().c_str());
    return 2;
  }
  auto* comm = group.value()->communicator().value();
  const int rank = comm->rank();
  const int n = comm->world_size();
  const bool registered = argc > 3 && std::string(argv[3]) == "registered";
  std::vector<float> ordinary(registered ? 0 : max_bytes / sizeof(float));
  std::span<float> memory(ordinary);
  std::shared_ptr<ddp::RegisteredBuffer> buffer;
  if (registered) {
    auto allocated = comm->AllocateShared(max_bytes);
    if (!allocated.ok()) {
      std::fprintf(stderr, "ddp-allreduce-bench: %s\n", allocated.status().message().c_str());
      return 1;
    }
    buffer = std::move(allocated).value();
    memory = std::span<float>(static_cast<float*>(buffer->data()), max_bytes / sizeof(float));
  }
  if (rank == 0) {
    std::printf("# ddp all_reduce, %d ranks, float32 sum, in place, transport %s, %s buffer\n", n,
                std::getenv("DDPRUN_CPU_TRANSPORT") ? std::getenv("DDPRUN_CPU_TRANSPORT") : "auto",
                registered ? (buffer->direct() ? "registered (direct)" : "registered (ordinary)")
                           : "ordinary");
    std::printf("%12s %12s %8s %10s %8s %8s %7s %8s\n", "size", "count", "type", "time(us)",
                "algbw", "busbw", "#wrong", "memcpy");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    std::span<float> data = memory.first(count);
    std::fill(data.begin(), data.end(), 1.0f);
    for (int i = 0; i < 3; ++i) {  // warm-up, as the gloo anchor does
      if (auto s = comm->AllReduce(ddp::CpuTensor(data.data(), count), ddp::ReduceOp::kSum);
          !s.ok()) {
        std::fprintf(stderr, "ddp-allreduce-bench: %s\n", s.message().c_str());
        return 1;
      }
    }
    const size_t iterations = std::max<size_t>(3, std::min<size_t>(200, (size_t{1} << 28) / bytes));
    std::fill(data.begin(), data.end(), 1.0f);
    (void)comm->Barrier();
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < iterations; ++i) {
      (void)comm->AllReduceAsync(ddp::CpuTensor(data.data(), count), ddp::ReduceOp::kSum);
    }
    if (auto s = comm->Barrier(); !s.ok()) {  // completes after every earlier all_reduce
      std::fprintf(stderr, "ddp-allreduce-bench: %s\n", s.message().c_str());
      return 1;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        static_cast<double>(iterations);
    // After `iterations` sums of ones: n^iterations overflows float for large counts; check
    // the exact value that float32 holds instead, n^k capped at float's range.
    double expected = 1.0;
    for (size_t i = 0; i < iterations; ++i) expected = static_cast<float>(expected * n);
    size_t wrong = 0;
    for (float v : data) wrong += v == static_cast<float>(expected) ? 0 : 1;
    const double copy_seconds = ConcurrentCopySeconds(*comm, data, iterations);
    if (rank == 0) {
      const double algbw = static_cast<double>(bytes) / seconds / 1e9;
      const double busbw = algbw * 2.0 * (n - 1) / n;
      std::printf("%12zu %12zu %8s %10.1f %8.3f %8.3f %7zu %8.3f\n", bytes, count, "float",
                  seconds * 1e6, algbw, busbw, wrong,
                  static_cast<double>(bytes) / copy_seconds / 1e9);
      std::fflush(stdout);
    }
  }
  return 0;
}
