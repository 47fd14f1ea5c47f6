// collectives_worker: a worker that uses the runtime's process group, for the collectives'
// integration tests (ranks as real processes, under ddprun or started by the test).
//
//   check [registered]
//                    run every collective check (tests/support/collective_checks.h), with the
//                    tensors in a registered buffer if asked; print "ok <n> checks <fingerprint>
//                    <direct|ordinary>" (equal on every rank) or one "FAILED ..." line per failure
//   die RANK [registered]
//                    all_reduce 4 MiB in a loop (in a registered buffer if asked); rank RANK
//                    kills itself with SIGKILL in the middle of its third one. The others print
//                    "failed after <ms> ms: <error>" and exit 3 (or "no failure" and exit 0)
//   init             create the process group; print "ready", or "error: <message>" and exit 2
//   starved RANK     allocate a 256 MiB registered buffer, rank RANK with its address space
//                    limited so that it maps its own slice but not its peers'; then all_reduce
//                    (sum) rank+1 in it. Prints "<direct|ordinary> sum <s>", s the sum every
//                    element holds, or "wrong sum" / "error: <message>" and exits 1 / 2
//   train STEPS HOW RANK [STEP_MS [STOP_STEP]]
//                    STEPS steps of a 4 KiB all_reduce (ddp::ReportStep each), STEP_MS apart.
//                    In the first attempt (TORCHELASTIC_RESTART_COUNT 0) rank RANK stops at step
//                    STOP_STEP (default STEPS/2) as HOW says: "pause" (blocked in StuckInUserCode,
//                    a function the stacks must name), "stop" (SIGSTOP to itself), "stall" (4 s in
//                    StuckInUserCode, then on) or "none"; or, in every attempt, "slow" (rank
//                    RANK waits 3 x STEP_MS after each step, a straggler). Prints
//                    "done <steps> steps" at the end
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "ddp/process_group.h"
#include "ddp/progress.h"
#include "support/collective_checks.h"

namespace {

int Check(ddp::ProcessGroup& group, bool registered) {
  ddprun::testing::CheckPlan plan;
  plan.sizes = {0, 1, 7, 1031, 65537};
  plan.registered = registered;
  auto results = ddprun::testing::RunCollectiveChecks(*group.communicator().value(), plan);
  for (const auto& failure : results.failures) std::printf("FAILED %s\n", failure.c_str());
  uint64_t combined = 0;
  for (uint64_t f : results.fingerprints) combined = combined * 31 + f;
  if (results.failures.empty()) {
    std::printf("ok %d checks %016llx %s\n", results.checks,
                static_cast<unsigned long long>(combined), results.direct ? "direct" : "ordinary");
  }
  return results.failures.empty() ? 0 : 1;
}

int Die(ddp::ProcessGroup& group, int victim, bool registered) {
  ddp::Communicator& comm = *group.communicator().value();
  std::vector<float> own(registered ? 0 : 1 << 20, 1.0f);
  std::span<float> data(own);
  std::shared_ptr<ddp::RegisteredBuffer> buffer;
  if (registered) {
    auto allocated = comm.AllocateShared((1 << 20) * sizeof(float));
    if (!allocated.ok()) {
      std::printf("error: %s\n", allocated.status().message().c_str());
      return 2;
    }
    buffer = std::move(allocated).value();
    data = std::span<float>(static_cast<float*>(buffer->data()), 1 << 20);
    std::printf("%s\n", buffer->direct() ? "direct" : "ordinary");
  }
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) {
    auto work = comm.AllReduceAsync(ddp::CpuTensor(data.data(), data.size()), ddp::ReduceOp::kMax);
    if (group.rank() == victim && i == 2) ::raise(SIGKILL);
    if (auto status = work->Wait(); !status.ok()) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::steady_clock::now() - started)
                          .count();
      std::printf("failed after %lld ms: %s\n", static_cast<long long>(ms),
                  status.message().c_str());
      return 3;
    }
  }
  std::printf("no failure\n");
  return 0;
}

// The bytes of address space this process uses now (/proc/self/statm's first field), or 0.
size_t AddressSpaceInUse() {
  unsigned long pages = 0;
  if (std::FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%lu", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  return static_cast<size_t>(pages) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

int Starved(ddp::ProcessGroup& group, int starved) {
  constexpr size_t kBytes = 256 << 20;
  ddp::Communicator& comm = *group.communicator().value();
  rlimit usual{};
  ::getrlimit(RLIMIT_AS, &usual);
  if (group.rank() == starved) {
    // Room for its own slice and 3/4 of another: mapping a peer's fails with ENOMEM, even
    // after a malloc arena (64 MiB) is reserved meanwhile; the ordinary memory that replaces
    // the slice still fits.
    rlimit tight = usual;
    tight.rlim_cur = AddressSpaceInUse() + kBytes + kBytes * 3 / 4;
    ::setrlimit(RLIMIT_AS, &tight);
  }
  auto allocated = comm.AllocateShared(kBytes);
  ::setrlimit(RLIMIT_AS, &usual);
  if (!allocated.ok()) {
    std::printf("error: %s\n", allocated.status().message().c_str());
    return 2;
  }
  auto& buffer = *allocated.value();
  const size_t count = kBytes / sizeof(float);
  auto* data = static_cast<float*>(buffer.data());
  std::fill(data, data + count, static_cast<float>(group.rank() + 1));
  if (auto status = comm.AllReduce(ddp::CpuTensor(data, count), ddp::ReduceOp::kSum);
      !status.ok()) {
    std::printf("error: %s\n", status.message().c_str());
    return 2;
  }
  const int n = group.world_size();
  const auto expected = static_cast<float>(n * (n + 1) / 2);
  if (!std::all_of(data, data + count, [&](float x) { return x == expected; })) {
    std::printf("wrong sum\n");
    return 1;
  }
  std::printf("%s sum %g\n", buffer.direct() ? "direct" : "ordinary", expected);
  return 0;
}

}  // namespace

// Outside the anonymous namespace, never inlined: the hang tests look for its name in the stacks.
// `seconds` < 0: forever.
[[gnu::noinline]] void StuckInUserCode(int seconds) {
  std::printf("rank stuck in StuckInUserCode\n");
  if (seconds >= 0) {
    ::sleep(static_cast<unsigned>(seconds));
    return;
  }
  while (true) ::pause();
}

namespace {

// `stop_step`: where the victim stops in the first attempt ("pause", "stall", "stop").
int Train(ddp::ProcessGroup& group, int64_t steps, const std::string& how, int victim, int step_ms,
          int64_t stop_step) {
  ddp::Communicator& comm = *group.communicator().value();
  std::vector<float> data(1024, 1.0f);
  const char* restarts = std::getenv("TORCHELASTIC_RESTART_COUNT");
  const bool first_attempt = restarts == nullptr || std::string(restarts) == "0";
  for (int64_t step = 1; step <= steps; ++step) {
    if (first_attempt && group.rank() == victim && step == stop_step) {
      if (how == "pause") StuckInUserCode(-1);
      if (how == "stall") StuckInUserCode(4);
      if (how == "stop") ::raise(SIGSTOP);
    }
    if (auto status = comm.AllReduce(ddp::CpuTensor(data.data(), data.size()), ddp::ReduceOp::kMax);
        !status.ok()) {
      std::printf("failed at step %lld: %s\n", static_cast<long long>(step),
                  status.message().c_str());
      return 3;
    }
    ddp::ReportStep(step);
    // "slow": the victim's own work takes three times the others' (a straggler), every attempt.
    const int own_ms = how == "slow" && group.rank() == victim ? 3 * step_ms : step_ms;
    if (own_ms > 0) ::usleep(static_cast<useconds_t>(own_ms) * 1000);
  }
  std::printf("done %lld steps\n", static_cast<long long>(steps));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string mode = argc > 1 ? argv[1] : "";
  auto group = ddp::ProcessGroup::FromEnv();
  if (!group.ok()) {
    std::printf("error: %s\n", group.status().message().c_str());
    return 2;
  }
  if (mode == "init") {
    std::printf("ready\n");
    return 0;
  }
  if (mode == "check")
    return Check(*group.value(), argc > 2 && std::string(argv[2]) == "registered");
  if (mode == "die" && argc > 2) {
    return Die(*group.value(), std::atoi(argv[2]),
               argc > 3 && std::string(argv[3]) == "registered");
  }
  if (mode == "starved" && argc > 2) return Starved(*group.value(), std::atoi(argv[2]));
  if (mode == "train" && argc > 4) {
    const int64_t steps = std::atoll(argv[2]);
    const int status =
        Train(*group.value(), steps, argv[3], std::atoi(argv[4]), argc > 5 ? std::atoi(argv[5]) : 0,
              argc > 6 ? std::atoll(argv[6]) : steps / 2);
    // "linger": after the last step the group is destroyed and the worker stays 3 s, as one
    // that saves a last checkpoint.
    if (std::string(argv[3]) == "linger") {
      group.value().reset();
      ::sleep(3);
    }
    return status;
  }
  std::fprintf(stderr, "collectives_worker: unknown mode '%s'\n", mode.c_str());
  return 64;
}
