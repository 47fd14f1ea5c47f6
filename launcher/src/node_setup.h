// NodeSetup: what this node's agent runs with, once set up: PyTorch's store on MASTER_PORT, the
// coordinator that decides rounds and restarts, what serves the job's store or rendezvous from
// this node, and the job's store in `job`. `ddprun` sets up one node itself (SetUpSingleNode,
// its store started on demand: on_demand_store.h); the network launcher sets up the rest
// (network_node_setup.h).
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddprun/agent/local_job_record.h"
#include "ddprun/agent/round_coordinator.h"
#include "ddprun/agent/torch_store_server.h"
#include "ddprun/agent/worker_environment.h"
#include "launch_config.h"

namespace ddprun {

// What serves this node's part of the job over the network: the job's store, a rendezvous
// hosted here, the operators' endpoint. Ended after the workers' run.
class NodeServices {
 public:
  virtual ~NodeServices() = default;
  // The run is over (the coordinator is gone): serves what the other nodes still need, then
  // stops. `interrupted`: a signal ended this node's part.
  virtual void Finish(bool interrupted) = 0;
  // The workers' run ended, on the agent's event loop: stops waiting on it.
  virtual void StopWatching() {}
  // This process's children that serve the job (not the workers' leftovers).
  virtual std::vector<pid_t> Children() const { return {}; }
};

struct NodeSetup {
  // One node with --metrics_port: the job's state, which its coordinator keeps for the pages.
  // Declared first: the services' pages read it.
  std::unique_ptr<LocalJobRecord> record;
  std::unique_ptr<NodeServices> services;  // never null
  // PyTorch's store, on the port this node offers as MASTER_PORT: the workers' store in every
  // round where this node is group rank 0 (never null).
  std::unique_ptr<TorchStoreServer> torch_store;
  std::unique_ptr<RoundCoordinator> coordinator;
  std::string host;  // names this node in reports
};

// How a launcher sets its node up: INVALID_ARGUMENT for what the user should change (a usage
// error on one node), another error for what failed. Fills job's store fields.
using NodeSetUp = std::function<Result<NodeSetup>(
    const LaunchConfig& config, boost::asio::io_context& io, JobEnvironment& job)>;

// A single node's store, as SetUpSingleNode hands it to the workers: its address ("host:port"),
// the token they present, and what serves it.
struct SingleNodeStore {
  std::string address;
  std::string token;
  std::unique_ptr<NodeServices> services;
};

// One node: a reserved MASTER_PORT (INVALID_ARGUMENT when it cannot be had: the user should pass
// --master_port), restarts decided here, the workers given `store`. `record` (may be null):
// kept up to date by the coordinator.
Result<NodeSetup> SetUpSingleNode(const LaunchConfig& config, boost::asio::io_context& io,
                                  JobEnvironment& job, SingleNodeStore store,
                                  std::unique_ptr<LocalJobRecord> record);

}  // namespace ddprun
