// The launcher's operators' endpoint (--metrics_port): the pages ddprund serves for its jobs
// (monitoring_routes.h: /metrics, /healthz, /readyz, the live page), for this run's job. On one
// node: the job as its LocalJobRecord keeps it, beside the embedded store; on the node of a
// multi-node job that hosts the rendezvous: that rendezvous, as a daemon's.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>

#include "ddprun/agent/local_job_record.h"
#include "ddprun/base/status.h"
#include "ddprun/monitoring/http_endpoint.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "launch_config.h"

namespace ddprun {

// Starts serving on 127.0.0.1:--metrics_port (with --token-file, every request must carry the
// token) and says where on stderr. Null, saying why in the log, on a node that does not host its
// job's rendezvous (`server` null: the node that does serves it). UNAVAILABLE when the port
// cannot be bound. `server`, `record` (one node's job; may be null) and `io` (the agent's event
// loop, which /healthz asks on one node) must outlive it.
Result<std::unique_ptr<HttpEndpoint>> ServeLauncherMetrics(const LaunchConfig& config,
                                                           RendezvousServer* server,
                                                           const LocalJobRecord* record,
                                                           boost::asio::io_context& io);

}  // namespace ddprun
