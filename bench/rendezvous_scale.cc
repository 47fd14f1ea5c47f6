// rendezvous_scale: a load generator that simulates N agents joining one job on a rendezvous
// server, many agents per process, each on its own Session stream (gRPC callback API). Measures
// three things, one after the other:
//   1. the round: from the last join written to the moment every agent holds its assignment;
//   2. a failure: one agent reports a failed worker on its stream, as a real agent does
//      (WorkerFailed with the round, the failure and its exit status); from that report written
//      to every agent holding its restart notice;
//   3. the re-join: every agent joins again the moment its restart arrives (a real agent first
//      stops its workers); from the failure report written to every agent holding its
//      assignment of the next round.
//
//   rendezvous_scale HOST:PORT N [CHANNELS [progress]]
//
// With `progress`, the job samples its ranks' progress (a hang timeout of 10 minutes, so none
// is found) and, once the first round is ready, every agent heartbeats its 8 ranks' progress;
// the generator then prints "progress sent" and waits for a line on stdin before the failure:
// the moment to measure the daemon's /metrics page of a job of N nodes (bench/metrics_scrape.py).
//
// Prints "nodes N join_s J round_s R restart_s F rejoin_s Q" on success. Exits 1 on any failure:
// a stream that breaks, an event of the wrong kind, a group rank not given exactly once in a
// round, or a phase not done within five minutes.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ddprun/v1/rendezvous.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPhaseTimeout = std::chrono::minutes(5);

// What every agent has seen, under one lock; the main thread waits on `cv` for the counts.
struct Totals {
  explicit Totals(int nodes)
      : group_ranks{std::vector<int>(static_cast<size_t>(nodes), 0),
                    std::vector<int>(static_cast<size_t>(nodes), 0)} {}
  std::mutex mu;
  std::condition_variable cv;
  int joins_written = 0;
  int rounds_ready[2] = {0, 0};  // first round, the round after the restart
  int restarts = 0;
  int failures = 0;
  std::string first_failure;
  Clock::time_point last_join_written;
  Clock::time_point last_round_ready[2];
  Clock::time_point last_restart;
  std::vector<int> group_ranks[2];  // counts per group rank and round, each must be 1
};

// One simulated agent: join, take the round, (one of them) report a failure, take the restart,
// join again, take the next round. Writes are queued: one in flight at a time, as gRPC requires.
class SimulatedAgent final
    : public grpc::ClientBidiReactor<ddprun::v1::AgentMessage, ddprun::v1::ServerEvent> {
 public:
  SimulatedAgent(ddprun::v1::Rendezvous::Stub& stub, int index, int nodes, bool progress,
                 Totals& totals)
      : index_(index), totals_(totals) {
    auto* join = join_.mutable_join();
    join->set_job_id("scale-" + std::to_string(nodes));
    join->mutable_settings()->set_min_nodes(nodes);
    join->mutable_settings()->set_max_nodes(nodes);
    join->mutable_settings()->set_max_restarts(1);  // the one failure is restarted
    join->mutable_settings()->set_join_timeout_ms(600'000);
    join->mutable_settings()->set_heartbeat_timeout_ms(600'000);  // no heartbeats needed here
    if (progress) join->mutable_settings()->set_hang_timeout_ms(600'000);
    join->mutable_node()->set_node_id("sim-" + std::to_string(index));
    join->mutable_node()->set_host(Host());
    join->mutable_node()->set_nproc(8);
    join->mutable_node()->set_master_port(29500);
    stub.async()->Session(&context_, this);
    Write(join_);
    StartRead(&event_);
    StartCall();
  }

  // Reports a failed worker of the round this agent holds, as the agent's SessionClient does.
  void ReportFailure() {
    int64_t round = 0;
    int first_global_rank = 0;
    {
      std::lock_guard lock(totals_.mu);
      round = round_;
      first_global_rank = first_global_rank_;
    }
    ddprun::v1::AgentMessage message;
    auto* failed = message.mutable_worker_failed();
    failed->set_round(round);
    failed->set_exit_status(1);
    auto* failure = failed->mutable_failure();
    failure->set_host(Host());
    failure->set_global_rank(first_global_rank);
    failure->set_local_rank(0);
    failure->set_pid(4242);
    failure->set_exit_code(1);
    failure->set_time_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    Write(std::move(message));
  }

  // A heartbeat with the progress of this agent's 8 ranks in the round it holds, as an agent
  // with hang detection on sends it.
  void SendProgress() {
    ddprun::v1::AgentMessage message;
    auto* heartbeat = message.mutable_heartbeat();
    {
      std::lock_guard lock(totals_.mu);
      heartbeat->set_round(round_);
      for (int local = 0; local < 8; ++local) {
        auto* rank = heartbeat->add_progress();
        rank->set_global_rank(first_global_rank_ + local);
        rank->set_local_rank(local);
        rank->set_step(1000 + index_ % 7);
        rank->set_collectives(3000);
        rank->set_progressed(true);
        rank->set_idle_ms(40);
        rank->set_step_time_us(20'000);
      }
    }
    Write(std::move(message));
  }

  void Cancel() { context_.TryCancel(); }

  void OnWriteDone(bool ok) override {
    ddprun::v1::AgentMessage* next = nullptr;
    {
      std::lock_guard lock(write_mu_);
      outbox_.pop_front();
      if (ok && !outbox_.empty()) next = &outbox_.front();
    }
    if (next != nullptr) StartWrite(next);
    std::lock_guard lock(totals_.mu);
    if (!ok) {
      Fail("a write failed");
    } else if (joins_written_ == 0) {
      joins_written_ = 1;
      ++totals_.joins_written;
      totals_.last_join_written = Clock::now();
    }
    totals_.cv.notify_all();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {  // the stream ended: only a failure before the bench cancels it
      std::lock_guard lock(totals_.mu);
      if (!cancelled_by_bench_) Fail("a stream ended early");
      totals_.cv.notify_all();
      return;
    }
    bool join_again = false;
    {
      std::lock_guard lock(totals_.mu);
      if (event_.has_round_ready() && rounds_seen_ < 2) {
        const auto& ready = event_.round_ready();
        const int phase = rounds_seen_++;
        round_ = ready.round();
        first_global_rank_ = ready.first_global_rank();
        ++totals_.rounds_ready[phase];
        totals_.last_round_ready[phase] = Clock::now();
        const int rank = ready.group_rank();
        auto& counts = totals_.group_ranks[phase];
        if (rank >= 0 && rank < static_cast<int>(counts.size())) {
          ++counts[static_cast<size_t>(rank)];
        } else {
          Fail("a group rank out of range");
        }
      } else if (event_.has_restart() && rounds_seen_ == 1 && !restarted_) {
        restarted_ = true;
        if (!event_.restart().has_failure()) Fail("a restart without the worker failure");
        ++totals_.restarts;
        totals_.last_restart = Clock::now();
        join_again = true;
      } else {
        Fail("an unexpected event: " + event_.ShortDebugString().substr(0, 200));
      }
      totals_.cv.notify_all();
    }
    if (join_again) Write(join_);
    StartRead(&event_);
  }

  void OnDone(const grpc::Status&) override {
    std::lock_guard lock(done_mu_);
    done_ = true;
    done_cv_.notify_all();
  }

  // Cancels the stream and waits until gRPC is done with this reactor.
  void Stop() {
    {
      std::lock_guard lock(totals_.mu);
      cancelled_by_bench_ = true;
    }
    Cancel();
    std::unique_lock lock(done_mu_);
    done_cv_.wait(lock, [this] { return done_; });
  }

 private:
  std::string Host() const {
    return "10." + std::to_string(index_ / 62'500) + "." + std::to_string(index_ / 250 % 250) +
           "." + std::to_string(index_ % 250 + 1);
  }

  // StartWrite is called outside the lock, in case gRPC runs OnWriteDone inline. A deque's
  // elements stay put while others are pushed or popped, so the pointer stays good.
  void Write(ddprun::v1::AgentMessage message) {
    ddprun::v1::AgentMessage* first = nullptr;
    {
      std::lock_guard lock(write_mu_);
      outbox_.push_back(std::move(message));
      if (outbox_.size() == 1) first = &outbox_.front();
    }
    if (first != nullptr) StartWrite(first);
  }

  // Called with totals_.mu held.
  void Fail(const std::string& what) {
    if (totals_.failures++ == 0)
      totals_.first_failure = "agent " + std::to_string(index_) + ": " + what;
  }

  const int index_;
  Totals& totals_;
  grpc::ClientContext context_;
  ddprun::v1::AgentMessage join_;
  ddprun::v1::ServerEvent event_;  // touched by the reactor's reads only
  std::mutex write_mu_;
  std::deque<ddprun::v1::AgentMessage> outbox_;  // front is being written
  // Under totals_.mu:
  int joins_written_ = 0;
  int rounds_seen_ = 0;
  bool restarted_ = false;
  bool cancelled_by_bench_ = false;
  int64_t round_ = 0;
  int first_global_rank_ = 0;
  std::mutex done_mu_;
  std::condition_variable done_cv_;
  bool done_ = false;
};

// Waits until `done` holds or an agent failed; false on a failure or after kPhaseTimeout.
bool AwaitPhase(Totals& totals, const std::function<bool()>& done) {
  std::unique_lock lock(totals.mu);
  totals.cv.wait_for(lock, kPhaseTimeout, [&] { return totals.failures > 0 || done(); });
  return totals.failures == 0 && done();
}

bool EachRankOnce(const std::vector<int>& counts) {
  for (int count : counts) {
    if (count != 1) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: rendezvous_scale HOST:PORT N [CHANNELS]\n");
    return 2;
  }
  const std::string address = argv[1];
  const int nodes = std::atoi(argv[2]);
  const int channel_count = argc > 3 ? std::atoi(argv[3]) : 16;
  const bool progress = argc > 4 && std::string(argv[4]) == "progress";
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
  Totals totals(nodes);
  const auto start = Clock::now();
  std::vector<std::unique_ptr<SimulatedAgent>> agents;
  for (int i = 0; i < nodes; ++i) {
    agents.push_back(std::make_unique<SimulatedAgent>(
        *stubs[static_cast<size_t>(i % channel_count)], i, nodes, progress, totals));
  }

  std::string failed_phase;
  Clock::time_point failure_reported;
  if (!AwaitPhase(totals, [&] { return totals.rounds_ready[0] == nodes; })) {
    failed_phase = "the first round";
  } else {
    if (progress) {
      for (auto& agent : agents) agent->SendProgress();
      std::printf("progress sent\n");
      std::fflush(stdout);
      std::string line;
      std::getline(std::cin, line);  // the page is measured meanwhile
    }
    failure_reported = Clock::now();
    agents[static_cast<size_t>(nodes / 2)]->ReportFailure();
    if (!AwaitPhase(totals, [&] { return totals.restarts == nodes; })) {
      failed_phase = "the restart";
    } else if (!AwaitPhase(totals, [&] { return totals.rounds_ready[1] == nodes; })) {
      failed_phase = "the round after the restart";
    }
  }
  for (auto& agent : agents) agent->Stop();

  std::lock_guard lock(totals.mu);
  if (!failed_phase.empty()) {
    std::fprintf(stderr,
                 "rendezvous_scale: %s did not complete: %d and %d of %d rounds ready, %d "
                 "restarts, %d failures%s%s\n",
                 failed_phase.c_str(), totals.rounds_ready[0], totals.rounds_ready[1], nodes,
                 totals.restarts, totals.failures, totals.failures > 0 ? "; first: " : "",
                 totals.first_failure.c_str());
    return 1;
  }
  if (!EachRankOnce(totals.group_ranks[0]) || !EachRankOnce(totals.group_ranks[1])) {
    std::fprintf(stderr, "rendezvous_scale: a group rank was not given exactly once\n");
    return 1;
  }
  auto seconds = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
  };
  std::printf("nodes %d join_s %.4f round_s %.4f restart_s %.4f rejoin_s %.4f\n", nodes,
              seconds(start, totals.last_join_written),
              seconds(totals.last_join_written, totals.last_round_ready[0]),
              seconds(failure_reported, totals.last_restart),
              seconds(failure_reported, totals.last_round_ready[1]));
  return 0;
}
