// Session streams: real agents' streams against the real gRPC rendezvous server on loopback,
// whose rounds run on a time the tests step.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <functional>
#include <optional>
#include <thread>

#include "ddprun/base/client_security.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

constexpr char kToken[] = "t0ken";
constexpr char kJob[] = "job7";
constexpr auto kLastCall = 200ms;
constexpr auto kHeartbeatTimeout = 1000ms;

// One agent's side of a Session: joins, heartbeats when told, reports, and reads the events the
// server pushes. Every read is bounded by the call's 30 s deadline.
class TestAgent {
 public:
  TestAgent(const std::string& address, std::string node_id, std::string token = kToken)
      : node_id_(std::move(node_id)),
        stub_(v1::Rendezvous::NewStub(
            grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {
    context_.set_deadline(std::chrono::system_clock::now() + 30s);
    context_.AddMetadata(kTokenMetadataKey, token);
    stream_ = stub_->Session(&context_);
  }

  ~TestAgent() { context_.TryCancel(); }

  void Join(int min_nodes, int max_nodes, int max_restarts = 0) {
    v1::AgentMessage message;
    auto* join = message.mutable_join();
    join->set_job_id(kJob);
    join->mutable_settings()->set_min_nodes(min_nodes);
    join->mutable_settings()->set_max_nodes(max_nodes);
    join->mutable_settings()->set_max_restarts(max_restarts);
    join->mutable_settings()->set_last_call_timeout_ms(kLastCall.count());
    join->mutable_settings()->set_heartbeat_timeout_ms(kHeartbeatTimeout.count());
    join->mutable_node()->set_node_id(node_id_);
    join->mutable_node()->set_host("host-" + node_id_);
    join->mutable_node()->set_nproc(2);
    join->mutable_node()->set_master_port(29500);
    Write(message);
  }

  void Heartbeat() {
    v1::AgentMessage beat;
    beat.mutable_heartbeat();
    Write(beat);
  }

  void Write(const v1::AgentMessage& message) { stream_->Write(message); }

  // The next event, or nullopt when the stream ended.
  std::optional<v1::ServerEvent> Next() {
    v1::ServerEvent event;
    if (!stream_->Read(&event)) return std::nullopt;
    return event;
  }

  grpc::Status Close() {
    stream_->WritesDone();
    v1::ServerEvent ignored;
    while (stream_->Read(&ignored)) {
    }
    return stream_->Finish();
  }

 private:
  std::string node_id_;
  std::unique_ptr<v1::Rendezvous::Stub> stub_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerEvent>> stream_;
};

// The server's rounds run on `time`, which only the test moves: a node is silent for as long as
// the test steps the time past its last message, however slow the machine.
class SteppedServer {
 public:
  SteppedServer() {
    RendezvousServerOptions options;
    options.token = kToken;
    options.time = &time_;
    auto server = RendezvousServer::Start(options);
    REQUIRE(server.ok());
    server_ = std::move(server).value();
    status_client_ = v1::Rendezvous::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  std::string address() const { return server_->address(); }
  void Advance(std::chrono::milliseconds step) { time_.Advance(step); }

  // Waits until the server's status shows node `node_id` as `predicate` wants it: the way to
  // know a message on a stream was applied before the time is stepped. 30 s at most.
  void AwaitNode(const std::string& node_id,
                 const std::function<bool(const v1::NodeStatus&)>& predicate) {
    const auto give_up = std::chrono::steady_clock::now() + 30s;
    while (std::chrono::steady_clock::now() < give_up) {
      grpc::ClientContext context;
      context.AddMetadata(kTokenMetadataKey, kToken);
      v1::DescribeJobsRequest request;
      request.set_job_id(kJob);
      v1::DescribeJobsResponse response;
      if (status_client_->DescribeJobs(&context, request, &response).ok()) {
        for (const auto& job : response.jobs()) {
          for (const auto& node : job.nodes()) {
            if (node.node_id() == node_id && predicate(node)) return;
          }
        }
      }
      std::this_thread::sleep_for(1ms);  // the poll's pace, not a stand-in for the event
    }
    FAIL("node " << node_id << " never reached the state the test waits for");
  }

  // Node `node_id`'s heartbeat, sent now, reached the server.
  // Node `node_id`'s message (a heartbeat, a join), sent after the time last moved, was applied:
  // the server heard the node at the present time.
  void AwaitHeard(const std::string& node_id) {
    AwaitNode(node_id, [](const v1::NodeStatus& node) { return node.heartbeat_age_ms() == 0; });
  }

 private:
  ManualTime time_;  // declared first: outlives the server
  std::unique_ptr<RendezvousServer> server_;
  std::unique_ptr<v1::Rendezvous::Stub> status_client_;
};

std::unique_ptr<SteppedServer> StartServer() { return std::make_unique<SteppedServer>(); }

v1::ServerEvent::RoundReady ExpectRoundReady(TestAgent& agent) {
  auto event = agent.Next();
  REQUIRE(event);
  REQUIRE(event->has_round_ready());
  return event->round_ready();
}

std::string ExpectRestart(TestAgent& agent) {
  auto event = agent.Next();
  REQUIRE(event);
  REQUIRE(event->has_restart());
  return event->restart().reason();
}

// Both agents join and their round completes.
// Both agents join; returns b's group rank in the round formed (the streams race: either may
// be first).
int FormRound(TestAgent& a, TestAgent& b, int min_nodes, int max_nodes, int max_restarts = 0) {
  a.Join(min_nodes, max_nodes, max_restarts);
  b.Join(min_nodes, max_nodes, max_restarts);
  ExpectRoundReady(a);
  return ExpectRoundReady(b).group_rank();
}

// Rank `rank` of host-b failed in `round`, with exit code `code` or (when given) `signal`.
v1::AgentMessage Failed(int64_t round, int rank, int code, int signal = 0) {
  v1::AgentMessage message;
  message.mutable_worker_failed()->set_round(round);
  v1::WorkerFailure& failure = *message.mutable_worker_failed()->mutable_failure();
  failure.set_host("host-b");
  failure.set_global_rank(rank);
  failure.set_pid(4000 + rank);
  failure.set_time_unix_ms(1764500000000 + rank);
  if (signal != 0) {
    failure.set_term_signal(signal);
  } else {
    failure.set_exit_code(code);
  }
  return message;
}

// Both nodes report round 0 succeeded; each hears that the job is complete, as the next event.
void ExpectBothSucceedAndComplete(TestAgent& a, TestAgent& b) {
  for (TestAgent* agent : {&a, &b}) {
    v1::AgentMessage done;
    done.mutable_succeeded()->set_round(0);
    agent->Write(done);
  }
  for (TestAgent* agent : {&a, &b}) {
    auto event = agent->Next();
    REQUIRE(event);
    CHECK(event->has_job_complete());
  }
}

}  // namespace

TEST_CASE("two agents form a round and each learns its ranks") {
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  a.Join(2, 2);
  b.Join(2, 2);
  auto ready_a = ExpectRoundReady(a);
  auto ready_b = ExpectRoundReady(b);
  // The two streams race: either node may have joined first and be group rank 0.
  const bool a_first = ready_a.group_rank() == 0;
  const auto& second = a_first ? ready_b : ready_a;
  CHECK(second.group_rank() == 1);
  CHECK((a_first ? ready_a : ready_b).first_global_rank() == 0);
  CHECK(second.first_global_rank() == 2);
  CHECK(second.world_size() == 4);
  CHECK(ready_a.master_addr() == ready_b.master_addr());
  CHECK(ready_a.master_addr() == (a_first ? "host-a" : "host-b"));
  CHECK(ready_b.master_port() == 29500);
}

TEST_CASE("a worker failure on one node restarts every node with the job-wide count") {
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  const int b_rank = FormRound(a, b, 2, 2, 1);
  b.Write(Failed(0, 3, 1));
  CHECK(ExpectRestart(a).find("rank 3 (local_rank 0) on host host-b: exit code 1") !=
        std::string::npos);
  ExpectRestart(b);
  a.Join(2, 2, 1);
  b.Join(2, 2, 1);
  auto ready = ExpectRoundReady(a);
  CHECK(ready.round() == 1);
  CHECK(ready.restart_count() == 1);
  CHECK(ExpectRoundReady(b).group_rank() == b_rank);  // membership unchanged: ranks kept

  b.Write(Failed(1, 2, 0, SIGSEGV));
  for (TestAgent* agent : {&a, &b}) {
    auto event = agent->Next();
    REQUIRE(event);
    REQUIRE(event->has_job_failed());
    CHECK(event->job_failed().reason().find("signal SIGSEGV (11)") != std::string::npos);
    // The root cause comes back as the record that went up.
    const v1::WorkerFailure& root = event->job_failed().root_cause();
    CHECK(root.host() == "host-b");
    CHECK(root.global_rank() == 2);
    CHECK(root.pid() == 4002);
    CHECK(root.term_signal() == SIGSEGV);
    CHECK(root.time_unix_ms() == 1764500000002);
  }
}

// Node b goes silent while a keeps beating: the time passes b's heartbeat timeout, not a's.
void SilenceB(SteppedServer& server, TestAgent& a) {
  server.Advance(kHeartbeatTimeout * 6 / 10);
  a.Heartbeat();
  server.AwaitHeard("a");
  server.Advance(kHeartbeatTimeout * 6 / 10);
}

// Node `id` joins (again) alone and its round forms once the last call has passed. The time
// moves first, so that the join is known applied when the server has heard the node again.
v1::ServerEvent::RoundReady RejoinAlone(SteppedServer& server, TestAgent& agent,
                                        const std::string& id) {
  server.Advance(1ms);
  agent.Join(1, 2);
  server.AwaitHeard(id);
  server.Advance(kLastCall);
  return ExpectRoundReady(agent);
}

TEST_CASE("a node that goes silent is declared lost and the survivor goes on") {
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  FormRound(a, b, 1, 2);
  SilenceB(*server, a);
  CHECK(ExpectRestart(a).find("node host-b lost") != std::string::npos);
  auto ready = RejoinAlone(*server, a, "a");
  CHECK(ready.group_world_size() == 1);
  CHECK(ready.world_size() == 2);
}

TEST_CASE("a node not silent for its whole heartbeat timeout is not lost") {
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  FormRound(a, b, 2, 2);
  for (int i = 0; i < 5; ++i) {
    server->Advance(kHeartbeatTimeout * 6 / 10);
    for (auto [agent, id] : {std::pair{&a, "a"}, std::pair{&b, "b"}}) {
      agent->Heartbeat();
      server->AwaitHeard(id);
    }
  }
  // Three heartbeat timeouts went by with neither node silent for one: no event came. The
  // stream is ordered, so had one been sent it would come before the job's end.
  ExpectBothSucceedAndComplete(a, b);
}

TEST_CASE("a node declared lost is told so once, however many late heartbeats it sends") {
  // A node cut off for longer than heartbeat_timeout: the heartbeats it queued arrive together
  // once its link is back. One notice for all of them, or the agent rejoins once per notice and
  // every join after the first restarts the round the others just started.
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  FormRound(a, b, 1, 2);
  SilenceB(*server, a);
  CHECK(ExpectRestart(a).find("node host-b lost") != std::string::npos);
  for (int i = 0; i < 3; ++i) b.Heartbeat();
  CHECK(ExpectRestart(b).find("declared lost") != std::string::npos);
  // The stream is ordered: a second notice would come before the answer to the join.
  RejoinAlone(*server, b, "b");
}

TEST_CASE("an agent that leaves restarts the others without closing the job") {
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  FormRound(a, b, 1, 2);
  v1::AgentMessage leave;
  leave.mutable_leave();
  b.Write(leave);
  CHECK(ExpectRestart(a) == "node host-b left");
  CHECK(b.Close().ok());
  CHECK(RejoinAlone(*server, a, "a").group_world_size() == 1);
}

TEST_CASE("the job is complete for every node when all succeeded") {
  auto server = StartServer();
  TestAgent a(server->address(), "a"), b(server->address(), "b");
  FormRound(a, b, 2, 2);
  ExpectBothSucceedAndComplete(a, b);
}

TEST_CASE("a session without the token, or without a join first, is refused") {
  auto server = StartServer();
  TestAgent intruder(server->address(), "x", "guess");
  intruder.Join(1, 1);
  CHECK_FALSE(intruder.Next());
  CHECK(intruder.Close().error_code() == grpc::StatusCode::UNAUTHENTICATED);

  TestAgent rude(server->address(), "y");
  rude.Heartbeat();
  CHECK_FALSE(rude.Next());
  CHECK(rude.Close().error_code() == grpc::StatusCode::FAILED_PRECONDITION);
}
