// ServeLauncherMetrics; see metrics_endpoint.h.
#include "metrics_endpoint.h"

#include <boost/asio/post.hpp>
#include <cstdio>
#include <future>

#include "ddprun/base/logging.h"
#include "ddprun/rendezvous/monitoring_routes.h"

namespace ddprun {
namespace {

// OK when the agent's event loop, which runs a single-node job's rounds, runs a task within
// `bound`: it is neither blocked nor over.
Status AgentLoopAnswers(boost::asio::io_context& io, std::chrono::milliseconds bound) {
  // Shared with the task: one that runs after the bound (or never) finds the promise still there.
  auto answered = std::make_shared<std::promise<void>>();
  std::future<void> answer = answered->get_future();
  boost::asio::post(io, [answered] { answered->set_value(); });
  if (answer.wait_for(bound) == std::future_status::ready) return Status::Ok();
  return UnavailableError(
      "the agent's event loop, which runs the job's rounds, did not answer "
      "within " +
      std::to_string(bound.count()) + " ms");
}

}  // namespace

Result<std::unique_ptr<HttpEndpoint>> ServeLauncherMetrics(const LaunchConfig& config,
                                                           RendezvousServer* server,
                                                           const LocalJobRecord* record,
                                                           boost::asio::io_context& io) {
  if (!config.metrics_port) return std::unique_ptr<HttpEndpoint>();
  if (server == nullptr) {
    GetLogger("launcher")
        ->info(
            "--metrics_port: this node does not host the job's rendezvous ({}:{}); the node "
            "or daemon that does serves its metrics",
            config.rdzv_host, config.rdzv_port);
    return std::unique_ptr<HttpEndpoint>();
  }
  MonitoredRendezvous monitored;
  monitored.server = server;
  if (record != nullptr) {
    monitored.local_job = [record] { return record->Snapshot(); };
    monitored.check_local_rounds = [&io](std::chrono::milliseconds bound) {
      return AgentLoopAnswers(io, bound);
    };
  }
  HttpEndpointOptions http;
  http.bind_host = "127.0.0.1";
  http.port = *config.metrics_port;
  http.token = config.security.token;
  // HTTPS with this node's certificate, as its rendezvous speaks TLS with it.
  http.tls_cert_pem = config.security.tls_cert_pem;
  http.tls_key_pem = config.security.tls_key_pem;
  http.routes = MonitoringRoutes(monitored);
  const char* scheme = http.tls_cert_pem.empty() ? "http" : "https";
  auto endpoint = HttpEndpoint::Start(std::move(http));
  if (!endpoint.ok()) {
    return Status(endpoint.status().code(), "--metrics_port: " + endpoint.status().message());
  }
  std::fprintf(stderr, "ddprun: metrics on %s://127.0.0.1:%d/metrics\n", scheme,
               endpoint.value()->port());
  return endpoint;
}

}  // namespace ddprun
