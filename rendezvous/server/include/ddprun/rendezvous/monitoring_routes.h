// The HTTP routes an operator reaches a rendezvous server's host through (http_endpoint.h):
//   /metrics  the rendezvous's metrics (docs/metrics.md), in Prometheus's text format or, when
//             the Accept header asks for it, OpenMetrics;
//   /healthz  200 while the process serves and its rendezvous can act (the thread that applies
//             the rounds' deadlines answers within kHealthBound), else 503 saying why: for a
//             liveness probe or systemd's watchdog, which restart what fails it;
//   /readyz   200 while it is healthy, not shutting down, and its jobs' store answers (an etcd
//             member, within the etcd client's call timeout), else 503 saying why: for a
//             readiness probe or a load balancer, which send agents elsewhere meanwhile;
//   /         the live page (live_page.h), with its script /live.js, which polls
//   /api/jobs the jobs as `ddprun status --json` prints them (status_json.h), nodes and ranks
//             only for the job that `?job=ID` names, and of a large one only the ranks worth
//             a look (PageAbridgement).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "ddprun/monitoring/http_endpoint.h"
#include "ddprun/rendezvous/rendezvous_server.h"

namespace ddprun {

struct MonitoredRendezvous {
  const RendezvousServer* server = nullptr;  // must outlive the routes
  // Whether the jobs' store answers; empty: it is this process's memory, which always does.
  std::function<Status()> check_store;
  // Set when the process has begun to shut down; null: never. Must outlive the routes.
  const std::atomic<bool>* stopping = nullptr;
  // A standalone ddprun's: its one job, whose rounds its agent runs (LocalJobRecord), shown
  // beside the server's jobs (which serve only its store); and whether that agent can act
  // within a bound, which /healthz and /readyz then ask instead of the server's rounds. Both
  // called on the endpoint's thread; empty: none.
  std::function<JobSnapshot()> local_job;
  std::function<Status(std::chrono::milliseconds bound)> check_local_rounds;
};

inline constexpr std::chrono::milliseconds kHealthBound{1000};

std::map<std::string, HttpHandler> MonitoringRoutes(const MonitoredRendezvous& rendezvous);

}  // namespace ddprun
