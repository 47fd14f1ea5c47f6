// LocalJobRecord: a single-node job's state as a rendezvous server would show it, on a stepped
// clock (the latencies its histograms get are the steps between its events).
#include "ddprun/agent/local_job_record.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

NodeAssignment Round(int64_t round, int restarts) {
  NodeAssignment assignment;
  assignment.round = round;
  assignment.group_world_size = 1;
  assignment.world_size = 2;
  assignment.restart_count = restarts;
  return assignment;
}

RankProgress Rank(int global_rank, int64_t step, std::chrono::milliseconds idle) {
  RankProgress rank;
  rank.global_rank = rank.local_rank = global_rank;
  rank.step = step;
  rank.idle = idle;
  return rank;
}

}  // namespace

TEST_CASE("a local job's record counts its rounds, a hang, the failure it causes and the restart") {
  ManualTime time;
  RendezvousSettings settings;
  settings.max_restarts = 2;
  LocalJobRecord record("job-1", NodeDescription{"node-a", "host-a", 2}, settings, time);
  CHECK(record.Snapshot().state == "forming");

  time.Advance(3ms);
  record.RoundStarted(Round(0, 0));
  record.ProgressSampled({Rank(0, 7, 0ms), Rank(1, 5, 2500ms)});
  time.Advance(500ms);
  JobSnapshot running = record.Snapshot();
  CHECK(running.state == "running");
  CHECK(running.job_id == "job-1");
  CHECK(running.settings.max_restarts == 2);
  REQUIRE(running.nodes.size() == 1);
  CHECK(running.nodes[0].description.host == "host-a");
  REQUIRE(running.nodes[0].progress.size() == 2);
  CHECK(running.nodes[0].progress[1].idle == 3000ms);  // sampled 2.5 s idle, 0.5 s ago
  CHECK(running.counters.rounds_formed == 1);
  CHECK(running.counters.round_formation.count() == 1);
  CHECK(running.counters.round_formation.sum_seconds() == Approx(0.003));

  HangFinding hang;
  hang.hung = {Rank(1, 5, 2500ms)};
  record.HangFound(hang);
  WorkerFailure failure;
  failure.hang = "no progress for 2.5 s at step 5";
  failure.global_rank = 1;
  record.WorkerFailed(failure, /*restarting=*/true);
  time.Advance(40ms);
  record.RoundStarted(Round(1, 1));
  record.StragglerNamed();

  const JobSnapshot after = record.Snapshot();
  CHECK(after.round == 1);
  CHECK(after.restarts_used == 1);
  CHECK(after.nodes[0].progress.empty());  // the new round's ranks have not been sampled
  CHECK(after.last_failure.find("hung") != std::string::npos);
  CHECK(after.counters.hangs == 1);
  CHECK(after.counters.hang_detection.sum_seconds() == Approx(2.5));
  CHECK(after.counters.worker_hangs == 1);
  CHECK(after.counters.worker_exits == 0);
  CHECK(after.counters.stragglers == 1);
  CHECK(after.counters.rounds_formed == 2);
  CHECK(after.counters.restart.count() == 1);
  CHECK(after.counters.restart.sum_seconds() == Approx(0.04));
  CHECK(after.counters.round_formation.sum_seconds() == Approx(0.043));

  WorkerFailure exit;
  exit.exit_code = 3;
  record.WorkerFailed(exit, /*restarting=*/false);
  record.Failed("rank 0 exited 3");
  const JobSnapshot failed = record.Snapshot();
  CHECK(failed.state == "failed");
  CHECK(failed.last_failure == "rank 0 exited 3");
  CHECK(failed.counters.worker_exits == 1);
  CHECK(failed.counters.restart.count() == 1);
}

TEST_CASE("a local job whose workers all succeed is complete, its node succeeded") {
  ManualTime time;
  LocalJobRecord record("job-2", NodeDescription{"n", "h", 1}, RendezvousSettings{}, time);
  record.RoundStarted(Round(0, 0));
  record.Succeeded();
  const JobSnapshot done = record.Snapshot();
  CHECK(done.state == "complete");
  CHECK(done.nodes[0].succeeded);
}
