// MonitoringRoutes; see monitoring_routes.h.
#include "ddprun/rendezvous/monitoring_routes.h"

#include "ddprun/base/version.h"
#include "ddprun/monitoring/live_page.h"
#include "ddprun/monitoring/metrics_page.h"
#include "ddprun/rendezvous/status_json.h"

namespace ddprun {
namespace {

HttpResponse Unavailable(const std::string& why) {
  return HttpResponse{503, "text/plain; charset=utf-8", "503 Service Unavailable: " + why + "\n"};
}

// Whether whoever runs the rounds can act: the agent of a standalone ddprun, else the server.
Status CheckRounds(const MonitoredRendezvous& rendezvous) {
  return rendezvous.check_local_rounds ? rendezvous.check_local_rounds(kHealthBound)
                                       : rendezvous.server->CheckHealth(kHealthBound);
}

HttpResponse Metrics(const MonitoredRendezvous& rendezvous, const HttpRequest& request) {
  const MetricsFormat format = MetricsFormatForAccept(request.accept);
  MetricsPage page(format);
  page.Family("ddprun_build_info", MetricType::kGauge, "1, labelled with ddprun's version");
  page.Sample({{"version", DDPRUN_VERSION}}, 1);
  std::vector<JobSnapshot> local;
  if (rendezvous.local_job) local.push_back(rendezvous.local_job());
  rendezvous.server->WriteMetrics(page, std::move(local));
  return HttpResponse{200, std::string(MetricsContentType(format)), page.Finish()};
}

// /api/jobs: every job, its nodes and ranks only for the job named by `?job=` (the one the live
// page shows), and of a large one only the ranks worth a look, so that a poll stays small
// (PageAbridgement).
HttpResponse Jobs(const MonitoredRendezvous& rendezvous, const HttpRequest& request) {
  std::vector<JobSnapshot> jobs = rendezvous.server->Jobs();
  if (rendezvous.local_job) jobs.push_back(rendezvous.local_job());
  return HttpResponse{
      200, "application/json",
      JobsAsStatusJson(jobs, PageAbridgement{QueryParameter(request.query, "job")})};
}

}  // namespace

std::map<std::string, HttpHandler> MonitoringRoutes(const MonitoredRendezvous& rendezvous) {
  std::map<std::string, HttpHandler> routes;
  routes["/metrics"] = [rendezvous](const HttpRequest& request) {
    return Metrics(rendezvous, request);
  };
  routes["/healthz"] = [rendezvous](const HttpRequest&) {
    if (Status health = CheckRounds(rendezvous); !health.ok()) {
      return Unavailable(health.message());
    }
    return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  };
  routes["/readyz"] = [rendezvous](const HttpRequest&) {
    if (rendezvous.stopping != nullptr && rendezvous.stopping->load()) {
      return Unavailable("shutting down");
    }
    if (Status health = CheckRounds(rendezvous); !health.ok()) {
      return Unavailable(health.message());
    }
    if (rendezvous.check_store) {
      if (Status store = rendezvous.check_store(); !store.ok()) {
        return Unavailable("the jobs' store does not answer: " + store.message());
      }
    }
    return HttpResponse{200, "text/plain; charset=utf-8", "ready\n"};
  };
  routes["/"] = [](const HttpRequest&) {
    return HttpResponse{200, "text/html; charset=utf-8", std::string(LivePageHtml())};
  };
  routes["/live.js"] = [](const HttpRequest&) {
    return HttpResponse{200, "text/javascript; charset=utf-8", std::string(LivePageScript())};
  };
  routes["/api/jobs"] = [rendezvous](const HttpRequest& request) {
    return Jobs(rendezvous, request);
  };
  return routes;
}

}  // namespace ddprun
