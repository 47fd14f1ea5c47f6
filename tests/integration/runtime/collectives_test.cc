// The CPU backend's collectives with ranks as threads over real links: every collective, data
// type and op, world sizes 1 to 8, sizes from 0 and 1 element to several MiB, odd sizes that do
// not divide by the world size; the results equal a reference computed locally and are the same
// bits on every rank. Over shared memory and over forced TCP, with ordinary tensors and with
// tensors in registered buffers.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>

#include "comm/cpu/cpu_communicator.h"
#include "integration/runtime/rank_threads.h"
#include "support/collective_checks.h"
#include "support/timing_profile.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

std::vector<CheckResults> RunChecks(TestStore& store, int world, const std::string& transport,
                                    const CheckPlan& plan) {
  return RunRanks<CheckResults>(
      store, world, transport,
      [&](int, ddp::ProcessGroup& group) {
        return RunCollectiveChecks(*group.communicator().value(), plan);
      },
      [](const ddprun::Status& error) {
        CheckResults failed;
        failed.failures.push_back("creating the process group: " + error.ToString());
        return failed;
      });
}

void ExpectAllCorrectAndIdentical(const std::vector<CheckResults>& ranks) {
  for (size_t rank = 0; rank < ranks.size(); ++rank) {
    INFO("rank " << rank);
    CHECK(ranks[rank].failures.empty());
    for (size_t i = 0; i < std::min<size_t>(ranks[rank].failures.size(), 5); ++i) {
      WARN(ranks[rank].failures[i]);
    }
    CHECK(ranks[rank].checks > 0);
    CHECK(ranks[rank].fingerprints == ranks[0].fingerprints);  // the same bits everywhere
  }
}

// The all-reduce of several MiB: a count that divides by no world size here, in many chunks of
// the direct path (128 KiB) and pieces of a TCP message (1 MiB). Under a sanitizer a quarter
// (2.9 MiB of float32): at 2 ranks still two pieces a message and a dozen chunks a rank.
size_t LargeCount() { return UnderSanitizer() ? 750 * 1000 + 7 : 3 * 1000 * 1000 + 7; }

}  // namespace

TEST_CASE("every collective, type and op is right and bit-identical, world sizes 1 to 8") {
  const std::string transport = GENERATE(as<std::string>{}, "auto", "tcp");
  TestStore store;
  for (int world = 1; world <= 8; ++world) {
    INFO("world size " << world << ", transport " << transport);
    CheckPlan plan;
    if (world > 4) plan.sizes = {0, 1, 7, 1031};  // the large sizes are covered below 5 ranks
    ExpectAllCorrectAndIdentical(RunChecks(store, world, transport, plan));
  }
}

TEST_CASE("an all_reduce of several MiB is right and identical on every rank") {
  const std::string transport = GENERATE(as<std::string>{}, "auto", "tcp");
  TestStore store;
  for (int world : {2, 3, 8}) {
    INFO("world size " << world << ", transport " << transport);
    CheckPlan plan;
    plan.sizes = {};
    plan.large = LargeCount();
    ExpectAllCorrectAndIdentical(RunChecks(store, world, transport, plan));
  }
}

TEST_CASE(
    "collectives on registered buffers are right and bit-identical, read directly on one "
    "host") {
  const std::string transport = GENERATE(as<std::string>{}, "auto", "tcp");
  TestStore store;
  // Over TCP the buffer is ordinary memory and the ring runs, as the tests above cover: one
  // small world shows that the fallback is right.
  const std::vector<int> worlds =
      transport == "auto" ? std::vector<int>{1, 2, 3, 5} : std::vector<int>{2};
  for (int world : worlds) {
    INFO("world size " << world << ", transport " << transport);
    CheckPlan plan;
    plan.registered = true;
    plan.large = world == 2 && transport == "auto" ? LargeCount() : 0;  // many chunks
    if (world > 3 || transport == "tcp") {
      plan.sizes = {0, 1, 7, 1031};
    } else if (UnderSanitizer()) {
      plan.sizes = {0, 1, 7, 1031, 65539};  // the largest still two chunks and more (256 KiB)
    }
    auto ranks = RunChecks(store, world, transport, plan);
    ExpectAllCorrectAndIdentical(ranks);
    // Shared only where every rank is on this host over shared memory, and there are peers.
    for (const auto& rank : ranks) CHECK(rank.direct == (transport == "auto" && world > 1));
  }
}

TEST_CASE(
    "a registered buffer leaves nothing in /dev/shm, and ranks that disagree on a tensor's "
    "place fail with both places named") {
  TestStore store;
  auto outcomes = RunRanks<std::string>(
      store, 2, "auto",
      [](int rank, ddp::ProcessGroup& group) -> std::string {
        ddp::Communicator& comm = *group.communicator().value();
        auto buffer = comm.AllocateShared(1 << 16);
        if (!buffer.ok()) return buffer.status().ToString();
        // Every rank removes its own slice's name once all have mapped it: after a barrier, none
        // of this process's is left. (Other processes' may be there for a moment.)
        if (auto s = comm.Barrier(); !s.ok()) return s.ToString();
        const std::string ours = "ddprun-" + std::to_string(::getpid()) + "-registered-";
        for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
          if (entry.path().filename().string().starts_with(ours)) {
            return "left in /dev/shm: " + entry.path().string();
          }
        }
        auto* data = static_cast<float*>(buffer.value()->data());
        // Rank 1's tensor starts one element further in.
        return comm.AllReduce(ddp::CpuTensor(data + rank, 16), ddp::ReduceOp::kSum).ToString();
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  for (const auto& outcome : outcomes) {
    INFO(outcome);
    CHECK(outcome.rfind("INVALID_ARGUMENT: ", 0) == 0);
    CHECK(outcome.find("all_reduce sum of 16 float32 at byte 0") != std::string::npos);
    CHECK(outcome.find("all_reduce sum of 16 float32 at byte 4") != std::string::npos);
    CHECK(outcome.find("every rank must issue the same collectives") != std::string::npos);
  }
}

TEST_CASE(
    "a rank whose tensor is in a registered buffer while its peer's is not fails at once, "
    "saying so, and so does the peer") {
  // Either way round: rank `registered` passes a tensor in the buffer, the other ordinary memory.
  const int registered = GENERATE(0, 1);
  INFO("rank " << registered << "'s tensor is registered");
  TestStore store;
  auto outcomes = RunRanks<std::string>(
      store, 2, "auto",
      [&](int rank, ddp::ProcessGroup& group) -> std::string {
        ddp::Communicator& comm = *group.communicator().value();
        auto buffer = comm.AllocateShared(1 << 16);
        if (!buffer.ok()) return buffer.status().ToString();
        if (!buffer.value()->direct()) return "not direct";
        // A collective on ordinary memory first: the counts of collectives must line up.
        std::vector<float> ordinary(16, 1.0f);
        if (auto s = comm.AllReduce(ddp::CpuTensor(ordinary.data(), 16), ddp::ReduceOp::kSum);
            !s.ok()) {
          return "first: " + s.ToString();
        }
        float* data =
            rank == registered ? static_cast<float*>(buffer.value()->data()) : ordinary.data();
        return comm.AllReduce(ddp::CpuTensor(data, 16), ddp::ReduceOp::kSum).ToString();
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  INFO(outcomes[0] << "\n" << outcomes[1]);
  const std::string& mine = outcomes[static_cast<size_t>(registered)];
  CHECK(mine.rfind("INVALID_ARGUMENT: ", 0) == 0);
  CHECK(mine.find("rank " + std::to_string(1 - registered) +
                  " runs collective #3 outside this registered buffer") != std::string::npos);
  CHECK(mine.find("every rank's tensor must lie in a registered buffer") != std::string::npos);
  // The peer, in the ring, fails when this rank's communicator breaks, not at the deadline.
  const std::string& theirs = outcomes[static_cast<size_t>(1 - registered)];
  CHECK(theirs != "OK");
  CHECK(theirs.rfind("DEADLINE_EXCEEDED", 0) != 0);
}

TEST_CASE(
    "an all_reduce of inexact floats on a registered buffer gives the same bits on every "
    "rank, run after run, summed in its fixed order") {
  // Three ranks, so that the order of the additions matters; 1 MiB per rank, many chunks.
  constexpr int kWorld = 3;
  constexpr size_t kCount = 1 << 18;
  auto input = [](int rank, size_t i) {
    return std::sin(static_cast<float>(i) * 0.37f + static_cast<float>(rank)) * 1e3f / 7.0f;
  };
  TestStore store;
  auto runs = RunRanks<std::vector<std::vector<float>>>(
      store, kWorld, "auto",
      [&](int rank, ddp::ProcessGroup& group) {
        ddp::Communicator& comm = *group.communicator().value();
        std::vector<std::vector<float>> results;
        auto buffer = comm.AllocateShared(kCount * sizeof(float));
        if (!buffer.ok() || !buffer.value()->direct()) return results;
        auto* data = static_cast<float*>(buffer.value()->data());
        for (int run = 0; run < 3; ++run) {
          for (size_t i = 0; i < kCount; ++i) data[i] = input(rank, i);
          if (!comm.AllReduce(ddp::CpuTensor(data, kCount), ddp::ReduceOp::kSum).ok()) break;
          results.emplace_back(data, data + kCount);
        }
        return results;
      },
      [](const ddprun::Status&) { return std::vector<std::vector<float>>{}; });
  // The owner of element i's block adds the ranks' values starting with its own, once around.
  std::vector<float> expected(kCount);
  const size_t block_lines = (kCount * sizeof(float) / 64 + kWorld - 1) / kWorld;
  for (size_t i = 0; i < kCount; ++i) {
    const int owner = static_cast<int>(i * sizeof(float) / 64 / block_lines);
    float sum = input(owner, i);
    for (int k = 1; k < kWorld; ++k) sum += input((owner + k) % kWorld, i);
    expected[i] = sum;
  }
  for (int rank = 0; rank < kWorld; ++rank) {
    INFO("rank " << rank);
    REQUIRE(runs[rank].size() == 3);
    for (const auto& run : runs[rank]) CHECK(run == expected);
  }
}

TEST_CASE("ranks on one host use shared memory unless DDPRUN_CPU_TRANSPORT=tcp") {
  TestStore store;
  for (const std::string transport : {"auto", "tcp"}) {
    auto transports = RunRanks<std::string>(
        store, 3, transport,
        [](int, ddp::ProcessGroup& group) {
          auto* cpu = dynamic_cast<ddp::cpu::CpuCommunicator*>(group.communicator().value());
          return cpu ? cpu->transport_to_next() : std::string("not the CPU backend");
        },
        [](const ddprun::Status& error) { return error.ToString(); });
    for (const auto& t : transports) CHECK(t == (transport == "auto" ? "shm" : "tcp"));
  }
}

TEST_CASE("asynchronous collectives complete in the order they were issued") {
  TestStore store;
  auto outcomes = RunRanks<std::string>(
      store, 3, "auto",
      [](int rank, ddp::ProcessGroup& group) -> std::string {
        ddp::Communicator& comm = *group.communicator().value();
        std::vector<std::vector<float>> buffers(20, std::vector<float>(4096, float(rank + 1)));
        std::vector<std::shared_ptr<ddp::Work>> works;
        for (auto& buffer : buffers) {
          works.push_back(comm.AllReduceAsync(ddp::CpuTensor(buffer.data(), buffer.size()),
                                              ddp::ReduceOp::kSum));
        }
        // Waiting for the last one only: every earlier one must be done by then.
        if (auto s = works.back()->Wait(); !s.ok()) return s.ToString();
        for (size_t i = 0; i < works.size(); ++i) {
          if (!works[i]->Done()) return "operation " + std::to_string(i) + " was not done";
          if (buffers[i][0] != 6.0f) return "operation " + std::to_string(i) + " is wrong";
        }
        return "in order";
      },
      [](const ddprun::Status& error) { return error.ToString(); });
  for (const auto& outcome : outcomes) CHECK(outcome == "in order");
}

TEST_CASE("bad arguments fail the one operation, not the communicator") {
  TestStore store;
  auto outcomes = RunRanks<std::vector<std::string>>(
      store, 2, "auto",
      [](int, ddp::ProcessGroup& group) {
        ddp::Communicator& comm = *group.communicator().value();
        std::vector<std::string> errors;
        float data[4] = {1, 2, 3, 4};
        float out[3] = {};
        errors.push_back(comm.Broadcast(ddp::CpuTensor(data, 4), 5).message());
        errors.push_back(comm.AllGather(ddp::CpuTensor(data, 4), ddp::CpuTensor(out, 3)).message());
        ddp::TensorView on_gpu = ddp::CpuTensor(data, 4);
        on_gpu.device = ddp::Device::kCuda;
        errors.push_back(comm.AllReduce(on_gpu, ddp::ReduceOp::kSum).message());
        errors.push_back(comm.AllReduce(ddp::CpuTensor(data, 4), ddp::ReduceOp::kSum).ToString());
        return errors;
      },
      [](const ddprun::Status& error) { return std::vector<std::string>{error.ToString()}; });
  for (const auto& errors : outcomes) {
    REQUIRE(errors.size() == 4);
    CHECK(errors[0] == "broadcast from rank 5 in a world of 2");
    CHECK(errors[1].find("all_gather's output must hold") == 0);
    CHECK(errors[2].find("is on a GPU") != std::string::npos);
    CHECK(errors[3] == "OK");
  }
}
