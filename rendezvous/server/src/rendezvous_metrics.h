// WriteRendezvousMetrics: a rendezvous server's /metrics families (docs/metrics.md): its jobs by
// state; per job its nodes, rounds, restarts, lost nodes, hangs, stragglers, worker failures by
// cause and four latency histograms; per rank (when the job samples progress: --hang_timeout or
// --straggler_ratio) its step, pace, collectives and time since progress, with aggregates per
// job (kMaxRankSeriesPerJob bounds the ranks written one by one); the server's calls,
// sessions and store. Every job the registry holds is written, so an ended job leaves the page
// when the registry forgets it (JobRegistry::kEndedJobRetention): the labels stay bounded.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "ddprun/monitoring/metrics_page.h"
#include "ddprun/rendezvous/job_store.h"
#include "ddprun/rendezvous/round_types.h"
#include "rpc_counts.h"

namespace ddprun {

// A job of more ranks than this gets series of its own only for its hung and straggling ranks,
// beside its aggregates: a page of 16k nodes of 8 ranks would otherwise hold a million series.
inline constexpr size_t kMaxRankSeriesPerJob = 1024;

struct RendezvousGauges {
  size_t open_sessions = 0;         // agents' session streams
  std::optional<StoreUsage> store;  // nullopt: the store does not say (etcd)
  size_t store_waiters = 0;         // store waits pending
};

void WriteRendezvousMetrics(const std::vector<JobSnapshot>& jobs,
                            const std::vector<RpcCounts::Count>& calls,
                            const RendezvousGauges& gauges, MetricsPage& page);

}  // namespace ddprun
