// Ranks as threads: world_size threads in this process, each with its own ddp::ProcessGroup
// meeting through one in-memory store and joined by real links (TCP sockets on loopback or
// shared memory): the gloo way of testing many ranks in one process, with no server. Catch2
// assertions are not thread-safe, so each rank returns its outcome and the test checks them
// after the join.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ddp/in_memory_store.h"
#include "ddp/process_group.h"

namespace ddprun::testing {

// The ranks' options and, for each run of ranks (NextJob), a fresh store they meet through.
class TestStore {
 public:
  ddp::ProcessGroupOptions Options(int rank, int world_size, const std::string& transport) const {
    ddp::ProcessGroupOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.local_rank = rank;
    options.local_world_size = world_size;
    options.cpu_transport = transport;
    options.timeout = std::chrono::seconds(60);
    return options;
  }
  void NextJob() { store_ = std::make_shared<ddp::InMemoryStore>(); }
  const std::shared_ptr<ddp::InMemoryStore>& store() const { return store_; }

 private:
  std::shared_ptr<ddp::InMemoryStore> store_ = std::make_shared<ddp::InMemoryStore>();
};

// Runs body(rank, group) for every rank on its own thread; returns each rank's result. A rank
// whose group cannot be created gets `on_error(status)` instead.
template <typename Result>
std::vector<Result> RunRanks(TestStore& store, int world_size, const std::string& transport,
                             const std::function<Result(int, ddp::ProcessGroup&)>& body,
                             const std::function<Result(const ddprun::Status&)>& on_error) {
  store.NextJob();
  std::vector<Result> results(static_cast<size_t>(world_size));
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world_size; ++rank) {
    threads.emplace_back([&, rank] {
      auto group =
          ddp::ProcessGroup::Create(store.Options(rank, world_size, transport), store.store());
      results[static_cast<size_t>(rank)] =
          group.ok() ? body(rank, *group.value()) : on_error(group.status());
    });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

}  // namespace ddprun::testing
