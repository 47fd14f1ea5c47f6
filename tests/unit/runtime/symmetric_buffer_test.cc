// A registered buffer's synchronization (SymmetricBuffer), with ranks as threads: collectives
// in step across the steps' wrap at 2^32, and a rank that waits on a peer that closed, or never
// comes, fails with that peer named instead of waiting on.
#include "direct/symmetric_buffer.h"

#include <catch2/catch.hpp>
#include <future>

#include "direct/direct_collectives.h"

using ddp::cpu::DirectOperation;
using ddp::cpu::SymmetricBuffer;

namespace {

using namespace std::chrono_literals;

// Two ranks' buffers of `bytes`, each mapping the other's, numbering collectives from `first`.
std::vector<std::unique_ptr<SymmetricBuffer>> TwoRanks(size_t bytes, uint64_t first = 0) {
  std::vector<std::unique_ptr<SymmetricBuffer>> ranks;
  std::vector<std::string> names;
  for (int rank = 0; rank < 2; ++rank) {
    auto created = SymmetricBuffer::Create(rank, 2, bytes, first);
    REQUIRE(created.ok());
    names.push_back(created.value()->name());
    ranks.push_back(std::move(created).value());
  }
  for (auto& rank : ranks) {
    REQUIRE(rank->OpenPeers(names).ok());
    rank->UnlinkOwn();
  }
  return ranks;
}

ddp::cpu::Deadline In(std::chrono::milliseconds timeout) {
  return std::chrono::steady_clock::now() + timeout;
}

}  // namespace

TEST_CASE("all-reduces on a registered buffer stay in step across the steps' wrap at 2^32") {
  // 2^32 / kStepsPerOp collectives wrap the steps: start 3 before that.
  auto ranks = TwoRanks(4096, (uint64_t{1} << 32) / SymmetricBuffer::kStepsPerOp - 3);
  auto run = [&](int rank) {
    auto* data = reinterpret_cast<float*>(ranks[rank]->slice(rank));
    for (int i = 0; i < 8; ++i) {
      for (int k = 0; k < 1024; ++k) data[k] = static_cast<float>(rank + i);
      auto s = ddp::cpu::DirectAllReduce(*ranks[rank], 0, 1024, ddp::DataType::kFloat32,
                                         ddp::ReduceOp::kSum, In(60s));
      if (!s.ok()) return s.ToString();
      for (int k = 0; k < 1024; ++k) {
        if (data[k] != static_cast<float>(2 * i + 1))
          return "wrong in collective " + std::to_string(i);
      }
    }
    return std::string("ok");
  };
  auto other = std::async(std::launch::async, run, 1);
  CHECK(run(0) == "ok");
  CHECK(other.get() == "ok");
}

TEST_CASE("a rank waiting on a registered buffer's peer that closed fails at once, naming it") {
  auto ranks = TwoRanks(4096);
  // Whether rank 0 is still spinning, asleep on the peer's step or not yet waiting when the
  // close comes, it must fail; the deadline is far, so only the close can end the wait.
  auto waiting = std::async(std::launch::async, [&] { return ranks[0]->Begin({}, In(600s)); });
  ranks[1]->Close();
  REQUIRE(waiting.wait_for(60s) == std::future_status::ready);
  auto status = waiting.get();
  CHECK(status.code() == ddprun::StatusCode::kUnavailable);
  CHECK(status.message() == "rank 1 closed its registered buffer (it failed or left)");
}

TEST_CASE("a registered buffer's peer that never comes is a deadline error that names it") {
  auto ranks = TwoRanks(4096);
  auto status = ranks[0]->Begin({}, In(100ms));
  CHECK(status.code() == ddprun::StatusCode::kDeadlineExceeded);
  CHECK(status.message() == "timed out waiting for rank 1 in a collective on a registered buffer");
}
