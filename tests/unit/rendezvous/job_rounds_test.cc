// JobRounds, the multi-node round state machine, driven by a fake clock.
#include "job_rounds.h"

#include <catch2/catch.hpp>
#include <csignal>

using namespace ddprun;
using namespace std::chrono_literals;
using Type = NodeEvent::Type;

namespace {

// Rank `rank` on host-<node> ended with `exit_code` (or `signal`, when given).
WorkerFailure Failure(const std::string& node, int rank, int exit_code, int signal = 0) {
  WorkerFailure failure;
  failure.host = "host-" + node;
  failure.global_rank = rank;
  failure.local_rank = rank % 2;
  failure.pid = 1000 + rank;
  if (signal != 0) {
    failure.term_signal = signal;
  } else {
    failure.exit_code = exit_code;
  }
  return failure;
}

// A job with a clock the test moves by hand.
struct Job {
  explicit Job(RendezvousSettings settings) : rounds(settings, now) {}

  void Join(const std::string& id, int nproc = 2) {
    REQUIRE(rounds.Join({id, "host-" + id, nproc, 29500 + static_cast<int>(id.back())}, now).ok());
  }
  void Advance(std::chrono::milliseconds step) {
    now += step;
    rounds.Tick(now);
  }
  // The events of one type, by node.
  std::map<std::string, NodeEvent> Events(Type type) {
    std::map<std::string, NodeEvent> by_node;
    for (auto& event : pending) {
      if (event.type == type) by_node[event.node_id] = event;
    }
    return by_node;
  }
  void Collect() {
    auto fresh = rounds.TakeEvents();
    pending.insert(pending.end(), fresh.begin(), fresh.end());
  }
  void Clear() { pending.clear(); }

  RendezvousTime now{};
  JobRounds rounds;
  std::vector<NodeEvent> pending;
};

RendezvousSettings Nodes(int min_nodes, int max_nodes, int max_restarts = 0) {
  RendezvousSettings settings;
  settings.min_nodes = min_nodes;
  settings.max_nodes = max_nodes;
  settings.max_restarts = max_restarts;
  settings.join_timeout = 60s;
  settings.last_call_timeout = 1s;
  settings.heartbeat_timeout = 3s;
  return settings;
}

}  // namespace

TEST_CASE("a round completes when max nodes have joined and tells each its ranks") {
  Job job(Nodes(2, 2));
  job.Join("a", 2);
  job.Collect();
  CHECK(job.pending.empty());
  job.Join("b", 3);
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 2);
  CHECK(ready["a"].assignment.group_rank == 0);
  CHECK(ready["b"].assignment.group_rank == 1);
  CHECK(ready["a"].assignment.first_global_rank == 0);
  CHECK(ready["b"].assignment.first_global_rank == 2);
  CHECK(ready["b"].assignment.world_size == 5);
  CHECK(ready["b"].assignment.group_world_size == 2);
  CHECK(ready["b"].assignment.master_addr == "host-a");
  CHECK(ready["b"].assignment.master_port == 29500 + 'a');
  CHECK(ready["a"].assignment.round == 0);
  CHECK(job.rounds.state() == JobRounds::State::kRunning);
}

TEST_CASE("with MIN:MAX a round completes once the last-call window after MIN has passed") {
  Job job(Nodes(2, 4));
  job.Join("a");
  job.Join("b");
  job.Collect();
  CHECK(job.pending.empty());
  CHECK(job.rounds.NextDeadline() == job.now + 1s);
  job.Advance(999ms);
  job.Collect();
  CHECK(job.pending.empty());
  job.Advance(1ms);
  job.Collect();
  CHECK(job.Events(Type::kRoundReady).size() == 2);
}

TEST_CASE("fewer than MIN nodes by join_timeout fails the job for those that came") {
  Job job(Nodes(3, 3));
  job.Join("a");
  for (int i = 0; i < 30; ++i) {
    job.Advance(2s);
    REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
  }
  job.Advance(1ms);
  job.Collect();
  auto failed = job.Events(Type::kJobFailed);
  REQUIRE(failed.size() == 1);
  CHECK(failed["a"].reason.find("only 1 of the 3 nodes") != std::string::npos);
  CHECK(job.rounds.Join({"late", "h", 1, 1}, job.now).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("a worker failure restarts every node in a new round with the job-wide count") {
  Job job(Nodes(2, 2, 1));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  job.rounds.WorkerFailed("b", 0, Failure("b", 3, 1), 1, job.now);
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  REQUIRE(restart.size() == 2);
  CHECK(restart["a"].reason.find("rank 3 (local_rank 1) on host host-b: exit code 1 (restart 1 of "
                                 "1)") != std::string::npos);
  // The failure itself travels with the restart, as a record.
  REQUIRE(restart["a"].failure);
  CHECK(SameFailure(*restart["a"].failure, Failure("b", 3, 1)));
  job.Clear();
  job.Join("b");
  job.Join("a");  // rejoining in another order keeps the ranks: membership did not change
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 2);
  CHECK(ready["a"].assignment.group_rank == 0);
  CHECK(ready["b"].assignment.group_rank == 1);
  CHECK(ready["a"].assignment.round == 1);
  CHECK(ready["a"].assignment.restart_count == 1);
}

TEST_CASE("when the restart budget is spent every node is told the job failed and why") {
  Job job(Nodes(2, 2, 0));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 0, SIGSEGV), 139, job.now);
  job.Collect();
  auto failed = job.Events(Type::kJobFailed);
  REQUIRE(failed.size() == 2);
  CHECK(failed["b"].reason ==
        "rank 0 (local_rank 0) on host host-a: signal SIGSEGV (11) (restarts used: 0 of 0)");
  CHECK(job.rounds.last_failure() == failed["b"].reason);
  // Every node gets the root cause as a record: the one it came from recognises its own.
  for (auto& [node, event] : failed) {
    REQUIRE(event.failure);
    CHECK(SameFailure(*event.failure, Failure("a", 0, 0, SIGSEGV)));
  }
  REQUIRE(job.rounds.last_worker_failure());
  CHECK(job.rounds.last_worker_failure()->term_signal == SIGSEGV);
  CHECK(job.rounds.state() == JobRounds::State::kFailed);
}

TEST_CASE("a failure reported for an old round spends nothing") {
  Job job(Nodes(1, 1, 5));
  job.Join("a");
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 1), 1, job.now);
  job.Join("a");
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 2), 1, job.now);  // stale: round 0 is over
  CHECK(job.rounds.restarts_used() == 1);
  CHECK(job.rounds.state() == JobRounds::State::kRunning);
}

TEST_CASE("a node that stops heartbeating is lost and the others go on without it") {
  Job job(Nodes(2, 3));
  job.Join("a");
  job.Join("b");
  job.Join("c");
  job.Collect();
  job.Clear();
  job.Advance(2s);
  REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
  REQUIRE(job.rounds.Heartbeat("b", job.now).ok());
  job.Advance(1s);  // c silent for 3 s
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  CHECK(restart.size() == 2);
  CHECK(restart["a"].reason == "node host-c lost: no heartbeat for 3.0 s");
  CHECK(job.rounds.Heartbeat("c", job.now).code() == StatusCode::kNotFound);
  CHECK(job.rounds.restarts_used() == 0);  // membership changes are free
  job.Clear();
  job.Join("a");
  job.Join("b");  // everyone expected is back: no last-call wait
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 2);
  CHECK(ready["b"].assignment.group_world_size == 2);
}

TEST_CASE("below MIN after a loss the job waits for a replacement until join_timeout") {
  Job job(Nodes(2, 2));
  job.Join("a");
  job.Join("b");
  job.rounds.Leave("b", job.now);
  job.Join("a");
  job.Collect();
  job.Clear();
  job.Advance(2s);
  REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
  job.Join("replacement");
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 2);
  CHECK(ready["a"].assignment.group_rank == 0);  // the survivor keeps its rank
  CHECK(ready["replacement"].assignment.group_rank == 1);
}

TEST_CASE("one agent leaving on SIGTERM restarts the others at once and closes nothing") {
  Job job(Nodes(1, 2));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  job.rounds.Leave("a", job.now);
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  REQUIRE(restart.size() == 1);
  CHECK(restart["b"].reason == "node host-a left");
  job.Clear();
  job.Join("b");
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 1);
  CHECK(ready["b"].assignment.group_rank == 0);
  CHECK(ready["b"].assignment.world_size == 2);
}

TEST_CASE("a node arriving while a round runs below MAX starts a new round without a restart") {
  Job job(Nodes(1, 3, 0));
  job.Join("a");
  job.Advance(1s);
  job.Collect();
  REQUIRE(job.Events(Type::kRoundReady).size() == 1);
  job.Clear();
  job.Join("b");
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  REQUIRE(restart.size() == 1);
  CHECK(restart["a"].reason == "scale-up: node host-b joined");
  job.Clear();
  job.Join("a");
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 2);
  CHECK(ready["a"].assignment.group_rank == 0);
  CHECK(ready["b"].assignment.group_rank == 1);
  CHECK(job.rounds.restarts_used() == 0);
}

TEST_CASE("a node arriving while a full round runs waits without disturbing it") {
  Job job(Nodes(1, 1));
  job.Join("a");
  job.Collect();
  job.Clear();
  job.Join("spare");
  job.Collect();
  CHECK(job.pending.empty());
  CHECK(job.rounds.joined() == std::vector<std::string>{"spare"});
}

TEST_CASE("the job is complete when every member's workers succeeded") {
  Job job(Nodes(2, 2));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  job.rounds.NodeSucceeded("a", 0);
  job.Collect();
  CHECK(job.pending.empty());
  job.rounds.NodeSucceeded("b", 0);
  job.Collect();
  CHECK(job.Events(Type::kJobComplete).size() == 2);
  CHECK(job.rounds.state() == JobRounds::State::kComplete);
  CHECK_FALSE(job.rounds.NextDeadline().has_value());
}

TEST_CASE("a malformed node description is refused") {
  Job job(Nodes(1, 1));
  CHECK(job.rounds.Join({"", "h", 1, 0}, job.now).code() == StatusCode::kInvalidArgument);
  CHECK(job.rounds.Join({"a", "h", 0, 0}, job.now).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("a job that fails carries the root cause's exit status to every node") {
  Job job(Nodes(2, 2, 0));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  job.rounds.WorkerFailed("b", 0, Failure("b", 3, 7), 7, job.now);
  job.Collect();
  auto failed = job.Events(Type::kJobFailed);
  REQUIRE(failed.size() == 2);
  CHECK(failed["a"].exit_status == 7);
  CHECK(failed["a"].reason == failed["b"].reason);
  CHECK(failed["a"].reason.find("rank 3 (local_rank 1) on host host-b: exit code 7") == 0);
}

TEST_CASE("a restarted server adopts the round its nodes report, without a restart") {
  Job job(Nodes(2, 2, 3));  // a fresh JobRounds: what a restarted daemon has
  auto resume = [&](const std::string& id, int group_rank) {
    return job.rounds.Resume({id, "host-" + id, 2, 29500}, {4, group_rank, 2, 1, ""}, job.now);
  };
  REQUIRE(resume("b", 1).ok());
  job.Advance(1s);
  REQUIRE(resume("a", 0).ok());
  job.Collect();
  CHECK(job.pending.empty());
  CHECK(job.rounds.state() == JobRounds::State::kRunning);
  CHECK(job.rounds.round() == 4);
  CHECK(job.rounds.restarts_used() == 1);
  CHECK(job.rounds.members() == std::vector<std::string>{"a", "b"});
  job.rounds.NodeSucceeded("a", 4);
  job.rounds.NodeSucceeded("b", 4);
  job.Collect();
  CHECK(job.Events(Type::kJobComplete).size() == 2);
}

TEST_CASE("after a server restart, members that do not come back are dropped in a new round") {
  Job job(Nodes(1, 2, 0));
  REQUIRE(job.rounds.Resume({"a", "host-a", 2, 29500}, {2, 0, 2, 0, ""}, job.now).ok());
  job.Advance(2s);
  REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
  job.Advance(1s);  // heartbeat_timeout after the first resume: "b" never came back
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  REQUIRE(restart.size() == 1);
  CHECK(restart["a"].reason.find("not every node came back") != std::string::npos);
  job.Clear();
  job.Join("a");
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 1);
  CHECK(ready["a"].assignment.round == 3);
  CHECK(ready["a"].assignment.group_world_size == 1);
}

TEST_CASE(
    "after a failover, a member that does not come back is dropped heartbeat_timeout after the "
    "others last heard a server") {
  // heartbeat_timeout 3 s; the first node back had heard no server for `silent`.
  auto dropped_after = [](std::chrono::milliseconds silent) {
    Job job(Nodes(1, 2, 0));
    RunningRound running{2, 0, 2, 0, ""};
    running.server_silent = silent;
    REQUIRE(job.rounds.Resume({"a", "host-a", 2, 29500}, running, job.now).ok());
    for (auto waited = 0ms; waited < 10s; waited += 100ms) {
      job.Collect();
      if (!job.Events(Type::kRestart).empty()) return waited;
      job.Advance(100ms);
      REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
    }
    return 10'000ms;
  };
  CHECK(dropped_after(0ms) == 3s);  // unknown: the whole timeout from the first node back
  CHECK(dropped_after(1500ms) == 1500ms);
  // Never before the nodes coming back had their grace, and however long a node says it heard
  // no server.
  CHECK(dropped_after(2900ms) == 1s);
  CHECK(dropped_after(3600s) == 1s);
}

TEST_CASE("a node reconnecting to the same server in its running round changes nothing") {
  Job job(Nodes(2, 2));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  REQUIRE(job.rounds.Resume({"b", "host-b", 2, 29500}, {0, 1, 2, 0, ""}, job.now).ok());
  job.Collect();
  CHECK(job.pending.empty());
  CHECK(job.rounds.state() == JobRounds::State::kRunning);
}

TEST_CASE("a node resuming a round that is over is told to restart and joins the next") {
  Job job(Nodes(1, 2));
  job.Join("a");
  job.Advance(1s);
  job.Collect();
  job.Clear();
  // "b" ran round 0 of a previous life of this job; this server's round 0 has only "a".
  REQUIRE(job.rounds.Resume({"b", "host-b", 2, 29500}, {0, 1, 2, 0, ""}, job.now).ok());
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  CHECK(restart.size() == 2);  // "b" told its round is over; "a" restarted for the scale-up
  CHECK(restart.contains("b"));
  CHECK(job.rounds.joined() == std::vector<std::string>{"b"});
}

TEST_CASE("status lists members by group rank, then waiting nodes") {
  Job job(Nodes(1, 1));
  job.Join("a", 4);
  job.Collect();
  job.Join("spare", 2);
  job.Advance(500ms);
  auto nodes = job.rounds.Nodes(job.now);
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[0].description.node_id == "a");
  CHECK(nodes[0].group_rank == 0);
  CHECK(nodes[0].heartbeat_age == 500ms);
  CHECK(nodes[1].description.node_id == "spare");
  CHECK(nodes[1].group_rank == -1);
}

TEST_CASE("a node whose stream ended is lost after the reconnect grace unless it comes back") {
  Job job(Nodes(1, 2));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  job.rounds.Disconnected("b", job.now);
  job.rounds.Disconnected("a", job.now);
  job.Advance(500ms);
  REQUIRE(job.rounds.Resume({"a", "host-a", 2, 29500}, {0, 0, 2, 0, ""}, job.now).ok());  // back
  job.Advance(500ms);  // the grace (1 s) has passed for "b", not for "a"
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  REQUIRE(restart.size() == 1);
  CHECK(restart["a"].reason ==
        "node host-b lost: its agent disconnected and did not come back "
        "within 1.0 s");
}

TEST_CASE("a job whose every node has left is over at once, not left forming with no node") {
  Job job(Nodes(2, 2));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.rounds.Leave("a", job.now);
  CHECK(job.rounds.state() == JobRounds::State::kForming);  // b is told to rejoin
  job.rounds.Leave("b", job.now);
  CHECK(job.rounds.state() == JobRounds::State::kFailed);
  CHECK_FALSE(job.rounds.NextDeadline());  // nothing left to wait for
}

namespace {

// Node `node`'s ranks (first_rank, first_rank + 1) in `round`, at `step`, idle `idle`; rank
// `stalled_rank` (if theirs) idle `stalled_idle` at step - 1, outside a collective.
NodeProgress Progress(int64_t round, int first_rank, int64_t step, int stalled_rank = -1,
                      std::chrono::milliseconds stalled_idle = 0ms) {
  NodeProgress progress{round, {}};
  for (int rank = first_rank; rank < first_rank + 2; ++rank) {
    RankProgress r;
    r.global_rank = rank;
    r.local_rank = rank - first_rank;
    r.progressed = true;
    const bool stalled = rank == stalled_rank;
    r.step = stalled ? step - 1 : step;
    r.in_collective = !stalled;
    r.idle = stalled ? stalled_idle : stalled_idle;
    progress.ranks.push_back(r);
  }
  return progress;
}

RendezvousSettings WithHangs(HangSettings::Action action, int max_restarts = 2) {
  RendezvousSettings settings = Nodes(2, 2, max_restarts);
  settings.hang.timeout = 2s;
  settings.hang.first_timeout = 30s;
  settings.hang.action = action;
  return settings;
}

}  // namespace

TEST_CASE("the server names a hung rank on another node from the progress of every node") {
  Job job(WithHangs(HangSettings::Action::kRestart));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  // Every rank idle 2.5 s: rank 3 (node b) behind at step 9, the others waiting at step 10.
  REQUIRE(job.rounds.Heartbeat("a", job.now, Progress(0, 0, 10, -1, 2500ms)).ok());
  job.Collect();
  CHECK(job.pending.empty());  // node b not heard from yet: nothing is concluded
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(0, 2, 10, 3, 2500ms)).ok());
  job.Collect();
  auto hangs = job.Events(Type::kHang);
  REQUIRE(hangs.size() == 2);  // every member hears it
  CHECK(hangs["a"].hang.description ==
        "hang: rank 3 (host-b, local 1) at step 9 for 2.5 s; the other 3 ranks at step 10, "
        "waiting in a collective");
  REQUIRE(hangs["b"].hang.hung.size() == 1);
  CHECK(hangs["b"].hang.hung[0].global_rank == 3);
  // The same stall again, a sampling period (250 ms at this timeout) later, is not news.
  job.Clear();
  job.now += 300ms;
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(0, 2, 10, 3, 3000ms)).ok());
  job.Collect();
  CHECK(job.Events(Type::kHang).empty());
  // `status` shows each rank's progress, aged since the report.
  job.Advance(500ms);
  auto nodes = job.rounds.Nodes(job.now);
  REQUIRE(nodes[1].progress.size() == 2);
  CHECK(nodes[1].progress[1].idle == 3500ms);
  CHECK(nodes[1].progress[1].step == 9);
  // The hung node reports the hang as its failure: a restart, counted.
  job.Clear();
  WorkerFailure hung = Failure("b", 3, 0);
  hung.exit_code.reset();
  hung.hang = "no progress for 2.5 s at step 9";
  job.rounds.WorkerFailed("b", 0, hung, 1, job.now);
  job.Collect();
  auto restarts = job.Events(Type::kRestart);
  REQUIRE(restarts.size() == 2);
  CHECK(restarts["a"].reason.find("hung: no progress for 2.5 s at step 9 (restart 1 of 2)") !=
        std::string::npos);
}

TEST_CASE("progress of an old round, or of a job without hang detection, finds nothing") {
  Job off(Nodes(2, 2));
  off.Join("a");
  off.Join("b");
  REQUIRE(off.rounds.Heartbeat("a", off.now, Progress(0, 0, 10, 0, 1h)).ok());
  REQUIRE(off.rounds.Heartbeat("b", off.now, Progress(0, 2, 10, 2, 1h)).ok());
  off.Collect();
  CHECK(off.Events(Type::kHang).empty());
  Job stale(WithHangs(HangSettings::Action::kRestart));
  stale.Join("a");
  stale.Join("b");
  REQUIRE(stale.rounds.Heartbeat("a", stale.now, Progress(7, 0, 10, 0, 1h)).ok());
  REQUIRE(stale.rounds.Heartbeat("b", stale.now, Progress(7, 2, 10, 2, 1h)).ok());
  stale.Collect();
  CHECK(stale.Events(Type::kHang).empty());
}

TEST_CASE("under hang_action=fail a hang ends the job though restarts are left") {
  Job job(WithHangs(HangSettings::Action::kFail, 3));
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  WorkerFailure hung = Failure("a", 1, 0);
  hung.exit_code.reset();
  hung.hang = "no progress for 2.0 s at step 4";
  job.rounds.WorkerFailed("a", 0, hung, 1, job.now);
  job.Collect();
  CHECK(job.Events(Type::kRestart).empty());
  auto failed = job.Events(Type::kJobFailed);
  REQUIRE(failed.size() == 2);
  CHECK(failed["b"].reason.find("hung: no progress for 2.0 s at step 4") != std::string::npos);
  CHECK(job.rounds.state() == JobRounds::State::kFailed);
}

TEST_CASE("nodes that ask for a node rank get it, whatever the order they join in") {
  Job job(Nodes(3, 3));
  for (const auto& [id, rank] : std::vector<std::pair<std::string, int>>{{"c", 0}, {"a", 2}}) {
    REQUIRE(job.rounds.Join({id, "host-" + id, 2, 29500, rank}, job.now).ok());
  }
  // A rank asked for twice, or beyond the job's size, is refused with the reason.
  const Status twice = job.rounds.Join({"d", "host-d", 2, 29500, 2}, job.now);
  CHECK(twice.message() ==
        "node host-d asks for node rank 2, which node host-a has already asked for");
  CHECK(job.rounds.Join({"e", "host-e", 2, 29500, 3}, job.now).code() ==
        StatusCode::kInvalidArgument);
  REQUIRE(job.rounds.Join({"b", "host-b", 2, 29500, 1}, job.now).ok());
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 3);
  CHECK(ready["c"].assignment.group_rank == 0);
  CHECK(ready["b"].assignment.group_rank == 1);
  CHECK(ready["a"].assignment.group_rank == 2);
  CHECK(ready["a"].assignment.first_global_rank == 4);
  CHECK(ready["b"].assignment.master_addr == "host-c");
}

TEST_CASE("the server searches the job's progress for a hang at most once per sampling period") {
  Job job(WithHangs(HangSettings::Action::kRestart));
  job.Join("a");
  job.Join("b");
  REQUIRE(job.rounds.Heartbeat("a", job.now, Progress(0, 0, 10, -1, 100ms)).ok());
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(0, 2, 10, 3, 100ms)).ok());  // searched
  job.Collect();
  job.Clear();
  // Rank 3 is now stalled, but the last search was less than 250 ms ago.
  job.now += 100ms;
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(0, 2, 10, 3, 2500ms)).ok());
  job.Collect();
  CHECK(job.Events(Type::kHang).empty());
  job.now += 200ms;
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(0, 2, 10, 3, 2700ms)).ok());
  job.Collect();
  CHECK(job.Events(Type::kHang).size() == 2);
}

TEST_CASE("a node rank is free again once the node that asked for it left or asks for another") {
  Job job(Nodes(3, 3));
  REQUIRE(job.rounds.Join({"a", "host-a", 2, 29500, 1}, job.now).ok());
  CHECK(job.rounds.Join({"b", "host-b", 2, 29500, 1}, job.now).code() ==
        StatusCode::kInvalidArgument);
  REQUIRE(job.rounds.Join({"a", "host-a", 2, 29500, 2}, job.now).ok());  // a asks again, for 2
  REQUIRE(job.rounds.Join({"b", "host-b", 2, 29500, 1}, job.now).ok());
  job.rounds.Leave("a", job.now);
  REQUIRE(job.rounds.Join({"c", "host-c", 2, 29500, 2}, job.now).ok());
  CHECK(job.rounds.Join({"d", "host-d", 2, 29500, 1}, job.now).code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("the next deadline follows the node heard from longest ago, and only that one is lost") {
  Job job(Nodes(2, 2));
  const RendezvousTime start = job.now;
  job.Join("a");
  job.Join("b");
  job.Collect();
  job.Clear();
  CHECK(job.rounds.NextDeadline() == start + 3s);
  job.Advance(1s);
  REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
  CHECK(job.rounds.NextDeadline() == start + 3s);  // b's
  job.Advance(1s);
  REQUIRE(job.rounds.Heartbeat("b", job.now).ok());
  CHECK(job.rounds.NextDeadline() == start + 4s);  // a's
  job.rounds.Disconnected("a", job.now);           // within the reconnect grace, or lost
  CHECK(job.rounds.NextDeadline() == start + 3s);
  job.Advance(1s);
  job.Collect();
  auto restart = job.Events(Type::kRestart);
  REQUIRE(restart.size() == 1);
  CHECK(restart["b"].reason.find("node host-a lost") == 0);
  CHECK(job.rounds.HasNode("b"));
  CHECK_FALSE(job.rounds.HasNode("a"));
}

TEST_CASE("after a restart the round forms as soon as the last node expected back is lost") {
  RendezvousSettings settings = Nodes(2, 3, 1);
  settings.last_call_timeout = 30s;  // longer than the loss: only the loss can end the wait
  Job job(settings);
  job.Join("a");
  job.Join("b");
  job.Join("c");
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 1), 1, job.now);
  job.Collect();
  REQUIRE(job.Events(Type::kRestart).size() == 3);
  job.Clear();
  job.Join("a");
  job.Join("b");
  job.Collect();
  CHECK(job.Events(Type::kRoundReady).empty());  // c is expected back
  job.Advance(2s);
  REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
  REQUIRE(job.rounds.Heartbeat("b", job.now).ok());
  job.Advance(1s);  // c silent for 3 s: lost
  job.Collect();
  auto ready = job.Events(Type::kRoundReady);
  REQUIRE(ready.size() == 2);
  CHECK(ready["a"].assignment.group_world_size == 2);
  CHECK(ready["a"].assignment.round == 1);
}

TEST_CASE("after a restart a hang is found once every member has sent progress of the new round") {
  Job job(WithHangs(HangSettings::Action::kRestart));
  job.Join("a");
  job.Join("b");
  REQUIRE(job.rounds.Heartbeat("a", job.now, Progress(0, 0, 10)).ok());
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(0, 2, 10)).ok());
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 1), 1, job.now);
  job.Join("a");
  job.Join("b");
  job.Collect();
  REQUIRE(job.Events(Type::kRoundReady).size() == 2);
  job.Clear();
  job.now += 1s;  // past the sampling period of the searches above
  // Node a twice, with a stalled rank: b's progress of round 1 is still unknown.
  REQUIRE(job.rounds.Heartbeat("a", job.now, Progress(1, 0, 10, 1, 2500ms)).ok());
  REQUIRE(job.rounds.Heartbeat("a", job.now, Progress(1, 0, 10, 1, 2500ms)).ok());
  job.Collect();
  CHECK(job.pending.empty());
  REQUIRE(job.rounds.Heartbeat("b", job.now, Progress(1, 2, 10, -1, 2500ms)).ok());
  job.Collect();
  auto hangs = job.Events(Type::kHang);
  REQUIRE(hangs.size() == 2);
  REQUIRE(hangs["b"].hang.hung.size() == 1);
  CHECK(hangs["b"].hang.hung[0].global_rank == 1);
}

// The job's counters (docs/metrics.md), on the stepped clock: each latency is exactly what the
// clock moved.
TEST_CASE("the job's counters follow its rounds, a restart and a lost node, with their latencies") {
  Job job(Nodes(2, 2, 1));
  job.Join("a");
  job.now += 300ms;
  job.Join("b");
  const JobCounters& counters = job.rounds.counters();
  CHECK(counters.rounds_formed == 1);
  CHECK(counters.round_formation.count() == 1);
  CHECK(counters.round_formation.sum_seconds() == Approx(0.3));
  CHECK(counters.restart.count() == 0);

  job.now += 1s;
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 0, SIGSEGV), 139, job.now);
  CHECK(counters.worker_signals == 1);
  CHECK(counters.worker_exits == 0);
  job.now += 200ms;
  job.Join("a");
  job.now += 50ms;
  job.Join("b");
  CHECK(counters.rounds_formed == 2);
  CHECK(counters.restart.count() == 1);
  CHECK(counters.restart.sum_seconds() == Approx(0.25));
  // 0.25 s lies in the bucket whose bound is 0.25 (a bound is inclusive), none below.
  CHECK(counters.restart.counts()[7] == 1);
  CHECK(LatencyHistogram::kBounds[7] == 0.25);
  CHECK(counters.round_formation.sum_seconds() == Approx(0.3 + 0.25));

  // b falls silent; a keeps heartbeating until b is declared lost, 3 s after it was last heard.
  for (int i = 0; i < 30; ++i) {
    job.now += 100ms;
    REQUIRE(job.rounds.Heartbeat("a", job.now).ok());
    job.rounds.Tick(job.now);
  }
  CHECK(counters.nodes_lost == 1);
  CHECK(counters.lost_node_detection.count() == 1);
  CHECK(counters.lost_node_detection.sum_seconds() == Approx(3.0));
  CHECK(counters.worker_exits + counters.worker_hangs + counters.worker_spawn_failures == 0);
}

TEST_CASE("a job's record says where its rounds stand: forming, running with its members, ended") {
  Job job(Nodes(2, 2, 3));
  CHECK(job.rounds.ToRecord().state == JobRounds::State::kForming);
  job.Join("a");
  job.Join("b");
  JobRounds::Record running = job.rounds.ToRecord();
  CHECK(running.state == JobRounds::State::kRunning);
  CHECK(running.round == 0);
  CHECK(running.members == std::vector<std::string>{"a", "b"});
  job.rounds.WorkerFailed("a", 0, Failure("a", 0, 1), 1, job.now);
  JobRounds::Record restarting = job.rounds.ToRecord();
  CHECK(restarting.state == JobRounds::State::kForming);
  CHECK(restarting.round == 1);
  CHECK(restarting.restarts_used == 1);
  CHECK(restarting.members.empty());
}

TEST_CASE("a job taken over from its record adopts only the recorded round's members") {
  JobRounds::Record record;
  record.state = JobRounds::State::kRunning;
  record.round = 4;
  record.restarts_used = 2;
  record.members = {"a", "b"};
  auto resume = [](Job& job, const std::string& id, RunningRound running) {
    REQUIRE(job.rounds.Resume({id, "host-" + id, 2, 29500}, running, job.now).ok());
  };

  SECTION("its members, back with its round and their ranks, run on") {
    Job job(Nodes(2, 2, 3));
    job.rounds.TakeOver(record);
    resume(job, "b", {4, 1, 2, 2, ""});
    resume(job, "a", {4, 0, 2, 2, ""});
    job.Collect();
    CHECK(job.pending.empty());
    CHECK(job.rounds.state() == JobRounds::State::kRunning);
    CHECK(job.rounds.round() == 4);
    CHECK(job.rounds.restarts_used() == 2);
  }
  SECTION("a node back from an older round, or with another's rank, joins the next round") {
    Job job(Nodes(2, 2, 3));
    job.rounds.TakeOver(record);
    resume(job, "a", {3, 0, 2, 1, ""});  // its round was over before the leader died
    resume(job, "c", {4, 1, 2, 2, ""});  // rank 1 of round 4 was b's
    job.Collect();
    CHECK(job.Events(Type::kRestart).size() == 2);
    auto ready = job.Events(Type::kRoundReady);
    REQUIRE(ready.size() == 2);
    CHECK(ready["a"].assignment.round == 5);  // a number no node ran
    CHECK(ready["a"].assignment.restart_count == 2);
  }
  SECTION("a round that was forming is formed anew: nobody ran it") {
    Job job(Nodes(2, 2, 3));
    record.state = JobRounds::State::kForming;
    record.round = 5;
    record.members.clear();
    job.rounds.TakeOver(record);
    resume(job, "a", {4, 0, 2, 2, ""});
    resume(job, "b", {4, 1, 2, 2, ""});
    job.Collect();
    CHECK(job.Events(Type::kRestart).size() == 2);
    CHECK(job.Events(Type::kRoundReady).begin()->second.assignment.round == 5);
  }
  SECTION("an ended job stays ended") {
    Job job(Nodes(2, 2, 3));
    record.state = JobRounds::State::kFailed;
    record.end_reason = "rank 0 failed";
    job.rounds.TakeOver(record);
    Status refused = job.rounds.Resume({"a", "host-a", 2, 29500}, {4, 0, 2, 2, ""}, job.now);
    CHECK(refused.code() == StatusCode::kFailedPrecondition);
    CHECK(refused.message().find("the job has already ended (failed)") != std::string::npos);
    CHECK(job.rounds.last_failure() == "rank 0 failed");
  }
}
