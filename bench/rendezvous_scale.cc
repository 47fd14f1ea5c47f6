// rendezvous_scale: a load generator that simulates N agents joining one job on a rendezvous
// server, many agents per process, each on its own Session stream (gRPC callback API). Measures
// the time from the last join written to the moment every agent holds its round assignment.
//
//   rendezvous_scale HOST:PORT N [CHANNELS]
//
// Prints "nodes N join_s J round_s R" on success: J is the time to write all N joins, R the
// time from the last join written to the last RoundReady received. Exits 1 on any failure.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ddprun/v1/rendezvous.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Totals {
  std::mutex mu;
  std::condition_variable cv;
  int joins_written = 0;
  int rounds_ready = 0;
  int failures = 0;
  Clock::time_point last_join_written;
  Clock::time_point last_round_ready;
  std::vector<int> group_ranks;  // counts per group rank, to check each is given once
};

class SimulatedAgent final
    : public grpc::ClientBidiReactor<ddprun::v1::AgentMessage, ddprun::v1::ServerEvent> {
 public:
  SimulatedAgent(ddprun::v1::Rendezvous::Stub& stub, int index, int nodes, Totals& totals)
      : totals_(totals) {
    auto* join = join_.mutable_join();
    join->set_job_id("scale-" + std::to_string(nodes));
    join->mutable_settings()->set_min_nodes(nodes);
    join->mutable_settings()->set_max_nodes(nodes);
    join->mutable_settings()->set_join_timeout_ms(600'000);
    join->mutable_settings()->set_heartbeat_timeout_ms(600'000);  // no heartbeats needed here
    join->mutable_node()->set_node_id("sim-" + std::to_string(index));
    join->mutable_node()->set_host("10.0." + std::to_string(index / 250) + "." +
                                   std::to_string(index % 250 + 1));
    join->mutable_node()->set_nproc(8);
    join->mutable_node()->set_master_port(29500);
    stub.async()->Session(&context_, this);
    StartWrite(&join_);
    StartRead(&event_);
    StartCall();
  }

  void Cancel() { context_.TryCancel(); }

  void OnWriteDone(bool ok) override {
    std::lock_guard lock(totals_.mu);
    if (!ok) {
      ++totals_.failures;
    } else {
      ++totals_.joins_written;
      totals_.last_join_written = Clock::now();
    }
    totals_.cv.notify_all();
  }

  void OnReadDone(bool ok) override {
    std::lock_guard lock(totals_.mu);
    if (!ok || !event_.has_round_ready()) {
      ++totals_.failures;
    } else {
      ++totals_.rounds_ready;
      totals_.last_round_ready = Clock::now();
      const int rank = event_.round_ready().group_rank();
      if (rank >= 0 && rank < static_cast<int>(totals_.group_ranks.size())) {
        ++totals_.group_ranks[static_cast<size_t>(rank)];
      }
    }
    totals_.cv.notify_all();
  }

  void OnDone(const grpc::Status&) override {
    std::lock_guard lock(done_mu_);
    done_ = true;
    done_cv_.notify_all();
  }

  void AwaitDone() {
    std::unique_lock lock(done_mu_);
    done_cv_.wait(lock, [this] { return done_; });
  }

 private:
  Totals& totals_;
  grpc::ClientContext context_;
  ddprun::v1::AgentMessage join_;
  ddprun::v1::ServerEvent event_;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: rendezvous_scale HOST:PORT N [CHANNELS]\n");
    return 2;
  }
  const std::string address = argv[1];
  const int nodes = std::atoi(argv[2]);
  const int channel_count = argc > 3 ? std::atoi(argv[3]) : 16;
  if (nodes < 1 || channel_count < 1) {
    std::fprintf(stderr, "rendezvous_scale: N and CHANNELS must be positive\n");
    return 2;
  }
  std::vector<std::unique_ptr<ddprun::v1::Rendezvous::Stub>> stubs;
  for (int i = 0; i < channel_count; ++i) {
    grpc::ChannelArguments arguments;
    arguments.SetInt("ddprun.bench.channel", i);  // a distinct connection per channel
    stubs.push_back(ddprun::v1::Rendezvous::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), arguments)));
  }
  Totals totals;
  totals.group_ranks.assign(static_cast<size_t>(nodes), 0);
  const auto start = Clock::now();
  std::vector<std::unique_ptr<SimulatedAgent>> agents;
  for (int i = 0; i < nodes; ++i) {
    agents.push_back(std::make_unique<SimulatedAgent>(
        *stubs[static_cast<size_t>(i % channel_count)], i, nodes, totals));
  }
  bool complete = false;
  {
    std::unique_lock lock(totals.mu);
    complete = totals.cv.wait_for(lock, std::chrono::seconds(300), [&] {
      return totals.rounds_ready == nodes || totals.failures > 0;
    });
  }
  for (auto& agent : agents) agent->Cancel();
  for (auto& agent : agents) agent->AwaitDone();
  std::lock_guard lock(totals.mu);
  if (!complete || totals.failures > 0 || totals.rounds_ready != nodes) {
    std::fprintf(stderr, "rendezvous_scale: %d of %d rounds ready, %d failures\n",
                 totals.rounds_ready, nodes, totals.failures);
    return 1;
  }
  for (int count : totals.group_ranks) {
    if (count != 1) {
      std::fprintf(stderr, "rendezvous_scale: a group rank was not given exactly once\n");
      return 1;
    }
  }
  const double join_s = std::chrono::duration<double>(totals.last_join_written - start).count();
  const double round_s =
      std::chrono::duration<double>(totals.last_round_ready - totals.last_join_written).count();
  std::printf("nodes %d join_s %.4f round_s %.4f\n", nodes, join_s, round_s);
  return 0;
}
