// WriteRendezvousMetrics over a snapshot made by hand: which series a job and its ranks get, that
// an ended job's ranks are not written, and that docs/metrics.md documents every family written.
#include "rendezvous_metrics.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "support/test_paths.h"

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

JobSnapshot RunningJob() {
  JobSnapshot job;
  job.job_id = "train";
  job.state = "running";
  job.settings.max_restarts = 3;
  job.restarts_used = 1;
  job.counters.worker_exits = 1;
  job.counters.restart.Observe(40ms);
  NodeSnapshot node;
  node.description.host = "10.0.0.2";
  node.group_rank = 0;
  RankProgress rank;
  rank.global_rank = 5;
  rank.local_rank = 1;
  rank.host = "10.0.0.2";
  rank.step = 120;
  rank.collectives = 7;
  rank.in_collective = true;
  rank.idle = 1500ms;
  rank.step_time = 250ms;
  node.progress.push_back(rank);
  job.nodes.push_back(node);
  return job;
}

std::string Page(const std::vector<JobSnapshot>& jobs) {
  MetricsPage page(MetricsFormat::kPrometheusText);
  RendezvousGauges gauges;
  gauges.store = StoreUsage{4, 556};
  WriteRendezvousMetrics(jobs, {{"ddprun.v1.Rendezvous", "Set", "OK", 9}}, gauges, page);
  return page.Finish();
}

}  // namespace

TEST_CASE("a running job's page has its counts, its histograms and each rank's progress") {
  const std::string page = Page({RunningJob()});
  const std::string rank = R"({job="train",node="10.0.0.2",rank="5",local_rank="1"})";
  for (const std::string& line :
       {std::string(R"(ddprun_jobs{state="running"} 1)"),
        std::string(R"(ddprun_job_restarts_total{job="train"} 1)"),
        std::string(R"(ddprun_job_restarts_left{job="train"} 2)"),
        std::string(R"(ddprun_job_worker_failures_total{job="train",cause="exit_code"} 1)"),
        std::string(R"(ddprun_restart_seconds_bucket{job="train",le="0.05"} 1)"),
        std::string(R"(ddprun_restart_seconds_bucket{job="train",le="0.025"} 0)"),
        "ddprun_rank_step" + rank + " 120", "ddprun_rank_steps_per_second" + rank + " 4",
        "ddprun_rank_collectives_started_total" + rank + " 7",
        "ddprun_rank_collectives_completed_total" + rank + " 6",
        "ddprun_rank_seconds_since_progress" + rank + " 1.5",
        std::string(
            R"(ddprun_rpcs_total{service="ddprun.v1.Rendezvous",method="Set",code="OK"} 9)"),
        std::string("ddprun_store_keys 4"), std::string("ddprun_store_bytes 556")}) {
    INFO(line << "\n" << page);
    CHECK(page.find("\n" + line + "\n") != std::string::npos);
  }
}

TEST_CASE("an ended job keeps its counts but not its ranks' samples, which would only age") {
  JobSnapshot ended = RunningJob();
  ended.state = "complete";
  const std::string page = Page({ended});
  CHECK(page.find(R"(ddprun_job_restarts_total{job="train"} 1)") != std::string::npos);
  CHECK(page.find("ddprun_rank_step{") == std::string::npos);
  CHECK(page.find("ddprun_rank_seconds_since_progress{") == std::string::npos);
}

TEST_CASE(
    "a job of more ranks than the bound gets series only for its hung ranks, and aggregates") {
  JobSnapshot job = RunningJob();
  RankProgress rank = job.nodes[0].progress[0];
  job.nodes[0].progress.clear();
  for (int i = 0; i < static_cast<int>(kMaxRankSeriesPerJob) + 1; ++i) {
    rank.global_rank = i;
    rank.step = 100 + i;
    rank.hung = i == 7;
    job.nodes[0].progress.push_back(rank);
  }
  const std::string page = Page({job});
  size_t series = 0;
  for (size_t at = page.find("\nddprun_rank_step{"); at != std::string::npos;
       at = page.find("\nddprun_rank_step{", at + 1)) {
    ++series;
  }
  CHECK(series == 1);
  CHECK(page.find(R"(ddprun_rank_hung{job="train",node="10.0.0.2",rank="7",local_rank="1"} 1)") !=
        std::string::npos);
  CHECK(page.find("\nddprun_job_ranks_reporting{job=\"train\"} 1025\n") != std::string::npos);
  CHECK(page.find("\nddprun_job_ranks_hung{job=\"train\"} 1\n") != std::string::npos);
  CHECK(page.find("\nddprun_job_step_min{job=\"train\"} 100\n") != std::string::npos);
  CHECK(page.find("\nddprun_job_step_max{job=\"train\"} 1124\n") != std::string::npos);
}

TEST_CASE("docs/metrics.md has a row for every family the page writes") {
  const std::string page = Page({RunningJob()});
  std::ifstream file(std::string(ddprun::testing::paths::kSourceDir) + "/docs/metrics.md");
  std::stringstream docs;
  docs << file.rdbuf();
  REQUIRE_FALSE(docs.str().empty());
  const std::regex type_line(R"(# TYPE (\S+) (\S+))");
  std::set<std::string> families;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), type_line);
       it != std::sregex_iterator(); ++it) {
    families.insert((*it)[1]);
    INFO((*it)[1]);
    CHECK(docs.str().find("| `" + (*it)[1].str() + "` | " + (*it)[2].str() + " |") !=
          std::string::npos);
  }
  CHECK(families.size() >= 25);
}
