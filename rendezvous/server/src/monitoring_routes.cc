// MonitoringRoutes; see monitoring_routes.h.
#include "ddprun/rendezvous/monitoring_routes.h"

#include <algorithm>
#include <cctype>

#include "ddprun/base/version.h"
#include "ddprun/monitoring/live_page.h"
#include "ddprun/monitoring/metrics_page.h"
#include "ddprun/rendezvous/status_json.h"

namespace ddprun {
namespace {

HttpResponse Unavailable(const std::string& why) {
  return HttpResponse{503, "text/plain; charset=utf-8", "503 Service Unavailable: " + why + "\n"};
}

HttpResponse Metrics(const MonitoredRendezvous& rendezvous, const HttpRequest& request) {
  const MetricsFormat format = MetricsFormatForAccept(request.accept);
  MetricsPage page(format);
  page.Family("ddprun_build_info", MetricType::kGauge, "1, labelled with ddprun's version");
  page.Sample({{"version", DDPRUN_VERSION}}, 1);
  rendezvous.server->WriteMetrics(page);
  return HttpResponse{200, std::string(MetricsContentType(format)), page.Finish()};
}

// The value of `name` in a query string ("job=a%2Fb&x=1" -> "a/b" for "job"), percent-decoded;
// empty when absent.
std::string QueryValue(const std::string& query, const std::string& name) {
  size_t at = 0;
  while (at <= query.size()) {
    const size_t end = std::min(query.find('&', at), query.size());
    const std::string pair = query.substr(at, end - at);
    if (pair.rfind(name + "=", 0) == 0) {
      std::string value;
      for (size_t i = name.size() + 1; i < pair.size(); ++i) {
        const auto hex = [&](size_t j) {
          return std::isxdigit(static_cast<unsigned char>(pair[j])) != 0;
        };
        if (pair[i] == '%' && i + 2 < pair.size() && hex(i + 1) && hex(i + 2)) {
          value += static_cast<char>(std::stoi(pair.substr(i + 1, 2), nullptr, 16));
          i += 2;
        } else {
          value += pair[i] == '+' ? ' ' : pair[i];
        }
      }
      return value;
    }
    at = end + 1;
  }
  return "";
}

// /api/jobs: every job; each rank's progress only for the job named by `?job=` (the one the
// live page shows), so that a poll of a server with many jobs stays small.
HttpResponse Jobs(const MonitoredRendezvous& rendezvous, const HttpRequest& request) {
  std::vector<JobSnapshot> jobs = rendezvous.server->Jobs();
  const std::string shown = QueryValue(request.query, "job");
  for (JobSnapshot& job : jobs) {
    if (job.job_id == shown) continue;
    for (NodeSnapshot& node : job.nodes) node.progress.clear();
  }
  return HttpResponse{200, "application/json", JobsAsStatusJson(jobs)};
}

}  // namespace

std::map<std::string, HttpHandler> MonitoringRoutes(const MonitoredRendezvous& rendezvous) {
  std::map<std::string, HttpHandler> routes;
  routes["/metrics"] = [rendezvous](const HttpRequest& request) {
    return Metrics(rendezvous, request);
  };
  routes["/healthz"] = [rendezvous](const HttpRequest&) {
    if (Status health = rendezvous.server->CheckHealth(kHealthBound); !health.ok()) {
      return Unavailable(health.message());
    }
    return HttpResponse{200, "text/plain; charset=utf-8", "ok\n"};
  };
  routes["/readyz"] = [rendezvous](const HttpRequest&) {
    if (rendezvous.stopping != nullptr && rendezvous.stopping->load()) {
      return Unavailable("shutting down");
    }
    if (Status health = rendezvous.server->CheckHealth(kHealthBound); !health.ok()) {
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
