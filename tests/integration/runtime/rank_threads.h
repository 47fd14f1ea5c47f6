// Ranks as threads: world_size threads in this process, each with its own ddp::ProcessGroup
// connected through a real rendezvous server on loopback and real links (TCP sockets or shared
// memory) — the gloo way of testing many ranks in one process. Catch2 assertions are not
// thread-safe, so each rank returns its outcome and the test checks them after the join.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "ddp/process_group.h"
#include "ddprun/rendezvous/rendezvous_server.h"

namespace ddprun::testing {

// A rendezvous server on 127.0.0.1 for the test, with a fresh job id per call of NextJob.
class TestStore {
 public:
  TestStore() {
    RendezvousServerOptions options;
    options.token = "threads";
    server_ = RendezvousServer::Start(options).value();
  }
  ddp::ProcessGroupOptions Options(int rank, int world_size, const std::string& transport) {
    ddp::ProcessGroupOptions options;
    options.rank = rank;
    options.world_size = world_size;
    options.local_rank = rank;
    options.local_world_size = world_size;
    options.store_address = server_->address();
    options.security.token = "threads";
    options.job_id = job_;
    options.cpu_transport = transport;
    options.timeout = std::chrono::seconds(60);
    return options;
  }
  void NextJob() { job_ = "job-" + std::to_string(++jobs_); }

 private:
  std::unique_ptr<RendezvousServer> server_;
  std::string job_ = "job-0";
  int jobs_ = 0;
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
      auto group = ddp::ProcessGroup::Create(store.Options(rank, world_size, transport));
      results[static_cast<size_t>(rank)] =
          group.ok() ? body(rank, *group.value()) : on_error(group.status());
    });
  }
  for (auto& thread : threads) thread.join();
  return results;
}

}  // namespace ddprun::testing
