// SetUpSingleNode; see node_setup.h.
#include "node_setup.h"

#include "ddprun/agent/local_coordinator.h"
#include "ddprun/base/logging.h"
#include "host_name.h"

namespace ddprun {

Result<NodeSetup> SetUpSingleNode(const LaunchConfig& config, boost::asio::io_context& io,
                                  JobEnvironment& job, SingleNodeStore store,
                                  std::unique_ptr<LocalJobRecord> record) {
  NodeSetup setup;
  setup.record = std::move(record);
  setup.services = std::move(store.services);
  // MASTER_PORT: bound here (never listening) for the whole run, so no other job on the host is
  // given it, while rank 0's own listener (PyTorch's TCPStore, which also sets SO_REUSEADDR) can
  // still bind it. No "find a free port, close it, hope" race.
  int master_port = config.master_port.value_or(0);
  if (!config.master_port) {
    auto reservation = BoundSocket::Bind(config.master_addr, 0);
    if (!reservation.ok()) {
      return InvalidArgumentError("cannot reserve MASTER_PORT: " + reservation.status().message() +
                                  "; pass --master_port");
    }
    master_port = reservation->port();
    setup.reserved_port.emplace(std::move(reservation).value());
  }
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
