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
//
// DEVICE=cuda: the buffer lies on the rank's GPU and NCCL reduces it (`registered` does not
// apply); memcpy is then one device-to-device copy of the buffer. As in nccl-tests, busbw is 0
// for one rank: nothing crosses a link, and algbw is the rate of NCCL's local copy.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ddp/device_array.h"
#include "ddp/process_group.h"

namespace {

// The buffer every size reduces a prefix of: ordinary or registered memory on the CPU, or memory
// on the rank's GPU.
class Buffer {
 public:
  Buffer(std::span<float> host, ddp::DeviceArray<float> gpu) : host_(host), gpu_(std::move(gpu)) {}

  ddp::TensorView View(size_t count) {
    if (host_.empty()) return {gpu_.data(), count, ddp::DataType::kFloat32, ddp::Device::kCuda, 0};
    return ddp::CpuTensor(host_.data(), count);
  }
  void Fill(size_t count, float value) {
    if (!host_.empty()) {
      std::fill_n(host_.begin(), count, value);
      return;
    }
    const std::vector<float> values(count, value);
    ddp::device_memory::Copy(gpu_.data(), ddp::Device::kCuda, values.data(), ddp::Device::kCpu,
                             count * sizeof(float));
  }
  // The first `count` values, read back to the CPU.
  std::vector<float> Values(size_t count) const {
    if (!host_.empty()) return {host_.begin(), host_.begin() + static_cast<ptrdiff_t>(count)};
    std::vector<float> values(count);
    ddp::device_memory::Copy(values.data(), ddp::Device::kCpu, gpu_.data(), ddp::Device::kCuda,
                             count * sizeof(float));
    return values;
  }
  // Seconds per copy of the first `count` values into a second buffer on the same device, every
  // rank copying at the same time (device_memory::Copy returns once its copy is done).
  double ConcurrentCopySeconds(ddp::Communicator& comm, size_t count, size_t iterations) const {
    const ddp::Device device = host_.empty() ? ddp::Device::kCuda : ddp::Device::kCpu;
    const void* source = host_.empty() ? static_cast<const void*>(gpu_.data()) : host_.data();
    ddp::DeviceArray<float> copy(count, 0.0f, device);
    ddp::device_memory::Copy(copy.data(), device, source, device, count * sizeof(float));
    (void)comm.Barrier();
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < iterations; ++i) {
      ddp::device_memory::Copy(copy.data(), device, source, device, count * sizeof(float));
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
        static_cast<double>(iterations);
    (void)comm.Barrier();
    return seconds;
  }

 private:
  std::span<float> host_;  // empty: the buffer is gpu_
  ddp::DeviceArray<float> gpu_;
};

}  // namespace

int main(int argc, char** argv) {
  const size_t min_bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
  const size_t max_bytes = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : (64u << 20);
  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::fprintf(stderr, "ddp-allreduce-bench: %s\n", group.status().message().c_str());
    return 2;
  }
  const char* device_name = std::getenv("DEVICE");
  const bool on_gpu = device_name != nullptr && std::string(device_name) == "cuda";
  auto reducing = group.value()->communicator(on_gpu ? ddp::Device::kCuda : ddp::Device::kCpu);
  if (!reducing.ok()) {
    std::fprintf(stderr, "ddp-allreduce-bench: %s\n", reducing.status().message().c_str());
    return 1;
  }
  ddp::Communicator* comm = reducing.value();
  const int rank = comm->rank();
  const int n = comm->world_size();
  const bool registered = !on_gpu && argc > 3 && std::string(argv[3]) == "registered";
  std::vector<float> ordinary(registered || on_gpu ? 0 : max_bytes / sizeof(float));
  std::span<float> memory(ordinary);
  std::shared_ptr<ddp::RegisteredBuffer> shared;
  if (registered) {
    auto allocated = comm->AllocateShared(max_bytes);
    if (!allocated.ok()) {
      std::fprintf(stderr, "ddp-allreduce-bench: %s\n", allocated.status().message().c_str());
      return 1;
    }
    shared = std::move(allocated).value();
    memory = std::span<float>(static_cast<float*>(shared->data()), max_bytes / sizeof(float));
  }
  Buffer buffer(
      memory, on_gpu ? ddp::DeviceArray<float>(max_bytes / sizeof(float), 0.0f, ddp::Device::kCuda)
                     : ddp::DeviceArray<float>());
  const char* transport = std::getenv("DDPRUN_CPU_TRANSPORT");
  const std::string kind = on_gpu       ? "NCCL, GPU buffer"
                           : registered ? (shared->direct() ? "registered (direct) buffer"
                                                            : "registered (ordinary) buffer")
                                        : "ordinary buffer";
  if (rank == 0) {
    std::printf("# ddp all_reduce, %d ranks, float32 sum, in place, transport %s, %s\n", n,
                on_gpu ? "nccl" : (transport != nullptr ? transport : "auto"), kind.c_str());
    std::printf("%12s %12s %8s %10s %8s %8s %7s %8s\n", "size", "count", "type", "time(us)",
                "algbw", "busbw", "#wrong", "memcpy");
  }
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= 4) {
    const size_t count = bytes / sizeof(float);
    buffer.Fill(count, 1.0f);
    for (int i = 0; i < 3; ++i) {  // warm-up, as the gloo anchor does
      if (auto s = comm->AllReduce(buffer.View(count), ddp::ReduceOp::kSum); !s.ok()) {
        std::fprintf(stderr, "ddp-allreduce-bench: %s\n", s.message().c_str());
        return 1;
      }
    }
    const size_t iterations = std::max<size_t>(3, std::min<size_t>(200, (size_t{1} << 28) / bytes));
    buffer.Fill(count, 1.0f);
    (void)comm->Barrier();
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < iterations; ++i) {
      (void)comm->AllReduceAsync(buffer.View(count), ddp::ReduceOp::kSum);
    }
    // Completes after every earlier all_reduce: on the CPU in order, under NCCL on one stream.
    if (auto s = comm->Barrier(); !s.ok()) {
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
    for (float v : buffer.Values(count)) wrong += v == static_cast<float>(expected) ? 0 : 1;
    const double copy_seconds = buffer.ConcurrentCopySeconds(*comm, count, iterations);
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
