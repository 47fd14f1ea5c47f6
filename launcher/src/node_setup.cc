// SetUpSingleNode; see node_setup.h.
#include "node_setup.h"

#include "ddprun/agent/local_coordinator.h"
#include "ddprun/base/bound_socket.h"
#include "ddprun/base/logging.h"
#include "host_name.h"

namespace ddprun {

Result<NodeSetup> SetUpSingleNode(const LaunchConfig& config, boost::asio::io_context& io,
                                  JobEnvironment& job, SingleNodeStore store,
                                  std::unique_ptr<LocalJobRecord> record) {
  NodeSetup setup;
  setup.record = std::move(record);
  setup.services = std::move(store.services);
  // MASTER_PORT: PyTorch's store, served here before any worker starts, as torchrun 2.x's agent
  // serves it: every rank is its client (TORCHELASTIC_USE_AGENT_STORE=True), so none waits for
  // rank 0's to listen, and the port is this run's alone. No "find a free port, close it, hope"
  // race: it is bound once, and kept.
  auto bound = BoundSocket::Bind(config.master_addr, config.master_port.value_or(0));
  if (!bound.ok()) {
    return InvalidArgumentError(
        "cannot serve PyTorch's store on MASTER_PORT: " + bound.status().message() +
        (config.master_port ? "; pass another --master_port" : "; pass --master_port"));
  }
  auto served = TorchStoreServer::Start(io, std::move(bound).value());
  if (!served.ok()) return served.status();
  setup.torch_store = std::move(served).value();
  const int master_port = setup.torch_store->port();
  job.agent_store = true;
  job.store_address = store.address;
  setup.host = HostName();
  const int nodes = config.max_nodes;
  NodeAssignment first_round{0, config.node_rank, nodes, config.node_rank * config.nproc_per_node,
                             nodes * config.nproc_per_node, config.master_addr, master_port, 0,
                             // The job is the store's only one: its token is the credential.
                             store.token};
  GetLogger("launcher")
      ->info("run {}: {} worker(s), store at {}, MASTER_PORT {}", config.run_id,
             config.nproc_per_node, job.store_address, master_port);
  setup.coordinator = std::make_unique<LocalCoordinator>(
      io, first_round, config.max_restarts, config.rdzv_settings.hang, setup.record.get());
  return setup;
}

}  // namespace ddprun
