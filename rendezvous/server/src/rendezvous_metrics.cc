// WriteRendezvousMetrics; see rendezvous_metrics.h.
#include "rendezvous_metrics.h"

#include <algorithm>
#include <array>
#include <functional>
#include <string>

namespace ddprun {
namespace {

constexpr std::array<const char*, 4> kJobStates = {"forming", "running", "complete", "failed"};

MetricLabels JobLabel(const JobSnapshot& job) { return {{"job", job.job_id}}; }

// One family with a sample per job.
void PerJob(MetricsPage& page, const std::vector<JobSnapshot>& jobs, const char* name,
            MetricType type, const char* help,
            const std::function<double(const JobSnapshot&)>& value) {
  page.Family(name, type, help);
  for (const JobSnapshot& job : jobs) page.Sample(JobLabel(job), value(job));
}

void PerJobHistogram(MetricsPage& page, const std::vector<JobSnapshot>& jobs, const char* name,
                     const char* help, LatencyHistogram JobCounters::*histogram) {
  page.Family(name, MetricType::kHistogram, help);
  for (const JobSnapshot& job : jobs) page.Histogram(JobLabel(job), job.counters.*histogram);
}

struct RankOfJob {
  const JobSnapshot* job;
  const RankProgress* rank;
};

using Ranks = std::vector<const RankProgress*>;

// A running job whose ranks report progress, with them. An ended job's are left out: its last
// sample would age, and look like a stall, until the job is forgotten.
struct ReportingJob {
  const JobSnapshot* job;
  Ranks ranks;
};

// Every running job with ranks reporting, each collected once for all the rank families.
std::vector<ReportingJob> ReportingJobs(const std::vector<JobSnapshot>& jobs) {
  std::vector<ReportingJob> reporting;
  for (const JobSnapshot& job : jobs) {
    if (job.state != "running") continue;
    Ranks ranks;
    for (const NodeSnapshot& node : job.nodes) {
      for (const RankProgress& rank : node.progress) ranks.push_back(&rank);
    }
    if (!ranks.empty()) reporting.push_back({&job, std::move(ranks)});
  }
  return reporting;
}

// The ranks that get series of their own: every one of a job of at most kMaxRankSeriesPerJob,
// and of a larger job only those hung or named stragglers (its aggregates say the rest).
std::vector<RankOfJob> RanksWithSeries(const std::vector<ReportingJob>& jobs) {
  std::vector<RankOfJob> ranks;
  for (const ReportingJob& reporting : jobs) {
    const bool every_rank = reporting.ranks.size() <= kMaxRankSeriesPerJob;
    for (const RankProgress* rank : reporting.ranks) {
      if (every_rank || rank->hung || rank->straggler) ranks.push_back({reporting.job, rank});
    }
  }
  return ranks;
}

// One family with a sample per running job that has ranks reporting.
void PerReportingJob(MetricsPage& page, const std::vector<ReportingJob>& jobs, const char* name,
                     const char* help, const std::function<double(const Ranks&)>& value) {
  page.Family(name, MetricType::kGauge, help);
  for (const ReportingJob& reporting : jobs) {
    page.Sample(JobLabel(*reporting.job), value(reporting.ranks));
  }
}

void WriteRankAggregates(const std::vector<ReportingJob>& jobs, MetricsPage& page) {
  PerReportingJob(page, jobs, "ddprun_job_ranks_reporting",
                  "Ranks of the running round whose progress the job samples",
                  [](const Ranks& ranks) { return static_cast<double>(ranks.size()); });
  PerReportingJob(page, jobs, "ddprun_job_ranks_hung", "Ranks the job's latest hang search names",
                  [](const Ranks& ranks) {
                    return static_cast<double>(std::count_if(
                        ranks.begin(), ranks.end(), [](const auto* rank) { return rank->hung; }));
                  });
  PerReportingJob(page, jobs, "ddprun_job_step_min",
                  "The step of the job's slowest rank (-1 before every rank has reported one)",
                  [](const Ranks& ranks) {
                    int64_t least = ranks.front()->step;
                    for (const auto* rank : ranks) least = std::min(least, rank->step);
                    return static_cast<double>(least);
                  });
  PerReportingJob(page, jobs, "ddprun_job_step_max", "The step of the job's fastest rank",
                  [](const Ranks& ranks) {
                    int64_t most = ranks.front()->step;
                    for (const auto* rank : ranks) most = std::max(most, rank->step);
                    return static_cast<double>(most);
                  });
  PerReportingJob(page, jobs, "ddprun_job_seconds_since_progress_max",
                  "Seconds since the job's most idle rank last made progress",
                  [](const Ranks& ranks) {
                    std::chrono::milliseconds most{0};
                    for (const auto* rank : ranks) most = std::max(most, rank->idle);
                    return std::chrono::duration<double>(most).count();
                  });
}

void PerRank(MetricsPage& page, const std::vector<RankOfJob>& ranks, const char* name,
             MetricType type, const char* help,
             const std::function<std::optional<double>(const RankProgress&)>& value) {
  page.Family(name, type, help);
  for (const RankOfJob& entry : ranks) {
    const auto sample = value(*entry.rank);
    if (!sample) continue;
    page.Sample({{"job", entry.job->job_id},
                 {"node", entry.rank->host},
                 {"rank", std::to_string(entry.rank->global_rank)},
                 {"local_rank", std::to_string(entry.rank->local_rank)}},
                *sample);
  }
}

void WriteJobs(const std::vector<JobSnapshot>& jobs, MetricsPage& page) {
  page.Family("ddprun_jobs", MetricType::kGauge,
              "Jobs this rendezvous server holds, by state (ended ones for 10 minutes)");
  for (const char* state : kJobStates) {
    double count = 0;
    for (const JobSnapshot& job : jobs) count += job.state == state ? 1 : 0;
    page.Sample({{"state", state}}, count);
  }
  page.Family("ddprun_job_state", MetricType::kGauge,
              "1 for the state each job is in: forming, running, complete or failed");
  for (const JobSnapshot& job : jobs) page.Sample({{"job", job.job_id}, {"state", job.state}}, 1);
  PerJob(page, jobs, "ddprun_job_nodes", MetricType::kGauge,
         "Nodes the job holds: members of its round, nodes waiting for one, nodes not yet lost",
         [](const JobSnapshot& job) { return static_cast<double>(job.nodes.size()); });
  PerJob(page, jobs, "ddprun_job_round", MetricType::kGauge,
         "The job's round: 0 for the first, one more for each restart or membership change",
         [](const JobSnapshot& job) { return static_cast<double>(job.round); });
  PerJob(page, jobs, "ddprun_job_rounds", MetricType::kCounter,
         "Rounds formed (RoundReady sent to every member)",
         [](const JobSnapshot& job) { return static_cast<double>(job.counters.rounds_formed); });
  PerJob(page, jobs, "ddprun_job_restarts", MetricType::kCounter,
         "Restarts used of the job's budget (--max_restarts), job-wide",
         [](const JobSnapshot& job) { return static_cast<double>(job.restarts_used); });
  PerJob(page, jobs, "ddprun_job_restarts_left", MetricType::kGauge,
         "Restarts left of the job's budget: at 0 the next worker failure ends the job",
         [](const JobSnapshot& job) {
           return static_cast<double>(job.settings.max_restarts - job.restarts_used);
         });
  PerJob(page, jobs, "ddprun_job_nodes_lost", MetricType::kCounter,
         "Nodes declared lost: no heartbeat within heartbeat_timeout, or their agent gone",
         [](const JobSnapshot& job) { return static_cast<double>(job.counters.nodes_lost); });
  PerJob(page, jobs, "ddprun_job_hangs", MetricType::kCounter,
         "Hangs found among the job's ranks (each stall once)",
         [](const JobSnapshot& job) { return static_cast<double>(job.counters.hangs); });
  PerJob(page, jobs, "ddprun_job_stragglers", MetricType::kCounter,
         "Ranks named stragglers (--straggler_ratio), not counting their recoveries",
         [](const JobSnapshot& job) { return static_cast<double>(job.counters.stragglers); });
  page.Family("ddprun_job_worker_failures", MetricType::kCounter,
              "Worker failures reported, by cause: exit_code, signal, spawn_error (it never "
              "started) or hang (ddprun stopped it)");
  for (const JobSnapshot& job : jobs) {
    const JobCounters& counters = job.counters;
    const std::array<std::pair<const char*, int64_t>, 4> causes = {
        {{"exit_code", counters.worker_exits},
         {"signal", counters.worker_signals},
         {"spawn_error", counters.worker_spawn_failures},
         {"hang", counters.worker_hangs}}};
    for (const auto& [cause, count] : causes) {
      page.Sample({{"job", job.job_id}, {"cause", cause}}, static_cast<double>(count));
    }
  }
  PerJobHistogram(page, jobs, "ddprun_round_formation_seconds",
                  "From when a round began to form (the first join; the end of the round "
                  "before) to its RoundReady",
                  &JobCounters::round_formation);
  PerJobHistogram(page, jobs, "ddprun_restart_seconds",
                  "From a worker failure's report to the RoundReady of the round that restarts "
                  "the job",
                  &JobCounters::restart);
  PerJobHistogram(page, jobs, "ddprun_lost_node_detection_seconds",
                  "From when a node was last heard to its being declared lost",
                  &JobCounters::lost_node_detection);
  PerJobHistogram(page, jobs, "ddprun_hang_detection_seconds",
                  "From the hung ranks' last progress to the hang's finding",
                  &JobCounters::hang_detection);
}

void WriteRanks(const std::vector<JobSnapshot>& jobs, MetricsPage& page) {
  const std::vector<ReportingJob> reporting = ReportingJobs(jobs);
  WriteRankAggregates(reporting, page);
  const std::vector<RankOfJob> ranks = RanksWithSeries(reporting);
  PerRank(page, ranks, "ddprun_rank_step", MetricType::kGauge,
          "The last training step the rank reported (ddprun.step, the runtime's trainer)",
          [](const RankProgress& rank) -> std::optional<double> {
            if (rank.step < 0) return std::nullopt;
            return static_cast<double>(rank.step);
          });
  PerRank(page, ranks, "ddprun_rank_steps_per_second", MetricType::kGauge,
          "The rank's pace over its last steps (once it has taken a window of them)",
          [](const RankProgress& rank) -> std::optional<double> {
            if (rank.step_time.count() <= 0) return std::nullopt;
            return 1e6 / static_cast<double>(rank.step_time.count());
          });
  PerRank(page, ranks, "ddprun_rank_collectives_started", MetricType::kCounter,
          "Collectives the rank started in this round",
          [](const RankProgress& rank) -> std::optional<double> {
            return static_cast<double>(rank.collectives);
          });
  PerRank(page, ranks, "ddprun_rank_collectives_completed", MetricType::kCounter,
          "Collectives the rank completed in this round",
          [](const RankProgress& rank) -> std::optional<double> {
            return static_cast<double>(rank.collectives - (rank.in_collective ? 1 : 0));
          });
  PerRank(page, ranks, "ddprun_rank_seconds_since_progress", MetricType::kGauge,
          "Seconds since the rank last made progress (a step, a collective)",
          [](const RankProgress& rank) -> std::optional<double> {
            return std::chrono::duration<double>(rank.idle).count();
          });
  PerRank(page, ranks, "ddprun_rank_hung", MetricType::kGauge,
          "1 while the job's latest hang search names the rank, else 0",
          [](const RankProgress& rank) -> std::optional<double> { return rank.hung ? 1 : 0; });
  PerRank(page, ranks, "ddprun_rank_straggler", MetricType::kGauge,
          "1 while the job names the rank a straggler, else 0",
          [](const RankProgress& rank) -> std::optional<double> { return rank.straggler ? 1 : 0; });
}

void WriteServer(const std::vector<RpcCounts::Count>& calls, const RendezvousGauges& gauges,
                 MetricsPage& page) {
  page.Family("ddprun_rpcs", MetricType::kCounter,
              "Calls this server answered, by gRPC service, method and status code");
  for (const RpcCounts::Count& count : calls) {
    page.Sample({{"service", count.service}, {"method", count.method}, {"code", count.code}},
                static_cast<double>(count.calls));
  }
  page.Family("ddprun_sessions", MetricType::kGauge, "Agents' session streams open now");
  page.Sample({}, static_cast<double>(gauges.open_sessions));
  page.Family("ddprun_store_waiters", MetricType::kGauge, "Store waits pending now");
  page.Sample({}, static_cast<double>(gauges.store_waiters));
  if (!gauges.store) return;
  page.Family("ddprun_store_keys", MetricType::kGauge, "Keys the in-memory store holds");
  page.Sample({}, static_cast<double>(gauges.store->keys));
  page.Family("ddprun_store_bytes", MetricType::kGauge,
              "Bytes of keys and values the in-memory store holds");
  page.Sample({}, static_cast<double>(gauges.store->bytes));
}

}  // namespace

void WriteRendezvousMetrics(const std::vector<JobSnapshot>& jobs,
                            const std::vector<RpcCounts::Count>& calls,
                            const RendezvousGauges& gauges, MetricsPage& page) {
  WriteJobs(jobs, page);
  WriteRanks(jobs, page);
  WriteServer(calls, gauges, page);
}

}  // namespace ddprun
