// NodeSetup: what this node's agent runs with, once set up: the rendezvous server embedded here
// (always for one node; for many, when this host serves the endpoint), MASTER_PORT's
// reservation, the coordinator that decides rounds and restarts, and the job's store in `job`.
#pragma once

#include <boost/asio/io_context.hpp>
#include <memory>
#include <optional>
#include <string>

#include "ddprun/agent/local_job_record.h"
#include "ddprun/agent/round_coordinator.h"
#include "ddprun/agent/worker_environment.h"
#include "ddprun/base/bound_socket.h"
#include "ddprun/etcd/etcd_rendezvous_store.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "launch_config.h"

namespace ddprun {

struct NodeSetup {
  // --rdzv_backend=etcd-v3: where `server` keeps the job (before it: it outlives it).
  std::unique_ptr<etcd::EtcdRendezvousStore> etcd;
  std::unique_ptr<RendezvousServer> server;  // embedded here, when it is
  std::optional<BoundSocket> reserved_port;  // MASTER_PORT, kept bound for the run
  // One node with --metrics_port: the job's state, which its coordinator keeps for the pages.
  std::unique_ptr<LocalJobRecord> record;
  std::unique_ptr<RoundCoordinator> coordinator;
  std::string host;  // names this node in reports
};

// One node: a store on 127.0.0.1 that starts gRPC only when first used, a token, a reserved
// MASTER_PORT (INVALID_ARGUMENT when it cannot be had: the user should pass --master_port), and
// restarts decided here. Fills job's store fields.
Result<NodeSetup> SetUpSingleNode(const LaunchConfig& config, boost::asio::io_context& io,
                                  JobEnvironment& job);

// A node of a multi-node job: the rendezvous at --rdzv_endpoint (hosted here when this host
// serves it and nobody does yet), this node's address, a MASTER_PORT reserved on it, and the
// session to the server. Fills job's store fields.
Result<NodeSetup> SetUpMultiNode(const LaunchConfig& config, boost::asio::io_context& io,
                                 JobEnvironment& job);

}  // namespace ddprun
