// The good clients; see good_clients.h.
#include "good_clients.h"

#include <random>
#include <set>

#include "load_basics.h"

namespace ddprun::daemon_load {

namespace {

// One job of `n` nodes from join to JobComplete. Returns "" or what went wrong; `round_ms` is
// the time from the last join written to the last RoundReady read.
std::string RunGoodJob(v1::Rendezvous::Stub& stub, const Options& options, const std::string& job,
                       int n, double& round_ms, grpc::Status& failure) {
  std::vector<std::unique_ptr<SyncNode>> nodes;
  for (int i = 0; i < n; ++i) {
    auto node = std::make_unique<SyncNode>();
    Prepare(node->context, options, 30);
    node->stream = stub.Session(&node->context);
    v1::AgentMessage join;
    SetJoin(join, job, n, n, "node-" + std::to_string(i), 30'000, 10'000);
    const bool written = node->stream->Write(join);
    nodes.push_back(std::move(node));
    if (!written) {
      EndNodes(nodes, true);
      return "join write failed";
    }
  }
  const auto last_join = Clock::now();
  std::set<int> ranks;
  int64_t round = -1;
  for (auto& node : nodes) {
    v1::ServerEvent event;
    if (!node->stream->Read(&event) || !event.has_round_ready()) {
      node->context.TryCancel();
      std::string what =
          event.has_job_failed() ? "job failed: " + event.job_failed().reason() : "no RoundReady";
      EndNodes(nodes, true);
      return what;
    }
    ranks.insert(event.round_ready().group_rank());
    round = event.round_ready().round();
    if (event.round_ready().group_world_size() != n) {
      EndNodes(nodes, true);
      return "RoundReady with group_world_size " +
             std::to_string(event.round_ready().group_world_size());
    }
  }
  round_ms = MsSince(last_join);
  if (static_cast<int>(ranks.size()) != n) {
    EndNodes(nodes, true);
    return "a group rank given twice";
  }
  for (auto& node : nodes) {
    v1::AgentMessage heartbeat;
    heartbeat.mutable_heartbeat()->set_round(round);
    v1::AgentMessage succeeded;
    succeeded.mutable_succeeded()->set_round(round);
    if (!node->stream->Write(heartbeat) || !node->stream->Write(succeeded)) {
      EndNodes(nodes, true);
      return "heartbeat or succeeded write failed";
    }
  }
  for (auto& node : nodes) {
    v1::ServerEvent event;
    if (!node->stream->Read(&event) || !event.has_job_complete()) {
      EndNodes(nodes, true);
      return "no JobComplete";
    }
  }
  for (auto& node : nodes) node->stream->WritesDone();
  for (auto& node : nodes) {
    v1::ServerEvent ignored;
    while (node->stream->Read(&ignored)) {
    }
    grpc::Status status = node->stream->Finish();
    node->stream.reset();
    if (!status.ok()) failure = status;
  }
  return failure.ok() ? "" : "stream ended with " + std::string(CodeName(failure.error_code()));
}

}  // namespace

void GoodAgentLoop(const Options& options, int index, AgentTotals& totals) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "agent-" + std::to_string(index)));
  std::mt19937 random(static_cast<unsigned>(index));
  for (int seq = 0; g_phase.load() < kMixOver; ++seq) {
    const int n = 2 + static_cast<int>(random() % 3);
    const int phase = g_phase.load();
    const auto start = Clock::now();
    double round_ms = 0;
    grpc::Status failure;
    const std::string job = "good-" + std::to_string(index) + "-" + std::to_string(seq);
    const std::string error = RunGoodJob(*stub, options, job, n, round_ms, failure);
    if (error.empty()) {
      ++totals.rounds_formed;
      totals.nodes += n;
      totals.jobs.Record(grpc::Status::OK, true, MsSince(start), phase);
      totals.rounds.Record(grpc::Status::OK, true, round_ms, phase);
    } else {
      totals.jobs.Record(failure.ok() ? grpc::Status(grpc::StatusCode::UNKNOWN, error) : failure,
                         false, MsSince(start), phase);
      totals.jobs.Note(job + ": " + error);
    }
  }
}

void GoodStoreLoop(const Options& options, int index, ClassStats& stats) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "store-" + std::to_string(index)));
  v1::StoreScope scope;
  scope.set_job_id("store-" + std::to_string(index));
  int64_t counter = 0;
  std::string cas_value;
  std::string last_key;
  std::string last_value;
  Pacer pacer(options.store_rate);
  for (long i = 0; g_phase.load() < kMixOver; ++i) {
    pacer.Wait();
    const int phase = g_phase.load();
    grpc::ClientContext context;
    Prepare(context, options, 10);
    const auto start = Clock::now();
    grpc::Status status;
    bool right = true;
    switch (i % 5) {
      case 0: {
        v1::SetRequest request;
        *request.mutable_scope() = scope;
        last_key = "key-" + std::to_string(i % 64);
        last_value = std::string(100, 'v') + std::to_string(i);
        request.set_key(last_key);
        request.set_value(last_value);
        v1::SetResponse response;
        status = stub->Set(&context, request, &response);
        break;
      }
      case 1: {
        v1::GetRequest request;
        *request.mutable_scope() = scope;
        request.set_key(last_key);
        v1::GetResponse response;
        status = stub->Get(&context, request, &response);
        right = response.value() == last_value;
        break;
      }
      case 2: {
        v1::AddRequest request;
        *request.mutable_scope() = scope;
        request.set_key("counter");
        request.set_delta(1);
        v1::AddResponse response;
        status = stub->Add(&context, request, &response);
        if (status.ok()) right = response.value() == ++counter;
        break;
      }
      case 3: {
        v1::CompareSetRequest request;
        *request.mutable_scope() = scope;
        request.set_key("cas");
        request.set_expected(cas_value);
        const std::string desired = "cas-" + std::to_string(i);
        request.set_desired(desired);
        v1::CompareSetResponse response;
        status = stub->CompareSet(&context, request, &response);
        right = response.swapped() && response.value() == desired;
        if (right) cas_value = desired;
        break;
      }
      default: {
        v1::WaitRequest request;
        *request.mutable_scope() = scope;
        request.add_keys(last_key);
        request.set_timeout_ms(5000);
        v1::WaitResponse response;
        status = stub->Wait(&context, request, &response);
        break;
      }
    }
    const double ms = MsSince(start);
    if (status.ok() && !right) status = grpc::Status(grpc::StatusCode::DATA_LOSS, "wrong answer");
    stats.Record(status, status.ok(), ms, phase);
  }
}

void GoodTimeoutLoop(const Options& options, int index, ClassStats& stats) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "timeout-" + std::to_string(index)));
  Pacer pacer(2.0);
  while (g_phase.load() < kMixOver) {
    pacer.Wait();
    const int phase = g_phase.load();
    grpc::ClientContext context;
    Prepare(context, options, 60);  // the client's own deadline: the server's is the finding
    v1::WaitRequest request;
    request.mutable_scope()->set_job_id("timeouts-" + std::to_string(index));
    request.add_keys("never-set");
    request.set_timeout_ms(500);
    v1::WaitResponse response;
    const auto start = Clock::now();
    grpc::Status status = stub->Wait(&context, request, &response);
    const double late_ms = MsSince(start) - 500;
    // Expected: the server's DEADLINE_EXCEEDED ("wait for 1 key(s) timed out ..."), on time
    // give or take a second; the client's own 60 s deadline firing first is a failure.
    const bool servers = status.error_code() == grpc::DEADLINE_EXCEEDED &&
                         status.error_message().rfind("wait for", 0) == 0;
    stats.Record(status, servers && late_ms > -5 && late_ms < 1000, late_ms, phase);
  }
}

}  // namespace ddprun::daemon_load
