// SetUpSingleNode and SetUpMultiNode; see node_setup.h.
#include "node_setup.h"

#include "ddprun/agent/local_coordinator.h"
#include "ddprun/agent/rendezvous_coordinator.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/secret_token.h"
#include "ddprun/base/status_macros.h"
#include "node_address.h"
#include "rendezvous_node.h"

namespace ddprun {

Result<NodeSetup> SetUpSingleNode(const LaunchConfig& config, boost::asio::io_context& io,
                                  JobEnvironment& job) {
  ASSIGN_OR_RETURN(const std::string token, NewSecretToken("the store token"));
  RendezvousServerOptions server_options;
  server_options.bind_host = "127.0.0.1";
  server_options.token = token;
  server_options.start_on_first_connection = true;
  ASSIGN_OR_RETURN(auto server, RendezvousServer::Start(server_options));

  NodeSetup setup;
  setup.server = std::move(server);
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
  job.store_address = setup.server->address();
  setup.host = HostName();
  const int nodes = config.max_nodes;
  NodeAssignment first_round{0, config.node_rank, nodes, config.node_rank * config.nproc_per_node,
                             nodes * config.nproc_per_node, config.master_addr, master_port, 0,
                             // The job is the server's only one: its token is the credential.
                             token};
  GetLogger("launcher")
      ->info("run {}: {} worker(s), store at {}, MASTER_PORT {}", config.run_id,
             config.nproc_per_node, job.store_address, master_port);
  if (config.metrics_port) {
    NodeDescription node;
    node.node_id = setup.host;
    node.host = setup.host;
    node.nproc = config.nproc_per_node;
    node.scheduler = config.scheduler;
    setup.record = std::make_unique<LocalJobRecord>(config.run_id, node, config.rdzv_settings);
  }
  setup.coordinator = std::make_unique<LocalCoordinator>(
      io, first_round, config.max_restarts, config.rdzv_settings.hang, setup.record.get());
  return setup;
}

Result<NodeSetup> SetUpMultiNode(const LaunchConfig& config, boost::asio::io_context& io,
                                 JobEnvironment& job) {
  ASSIGN_OR_RETURN(auto node, PrepareRendezvousNode(config));
  NodeSetup setup;
  setup.etcd = std::move(node.etcd);
  setup.server = std::move(node.hosted);
  setup.reserved_port.emplace(std::move(node.master_port));
  // Named as on one node, with the address that tells nodes of one host name apart.
  setup.host = HostName() + " (" + node.address + ")";
  job.store_address = node.store_address;
  // The workers' store token is not this agent's: each round brings the job's credential.
  job.node_address = node.address;
  // Gloo (PyTorch's CPU backend) finds its own address from the host name, which often resolves
  // to a loopback address the other nodes cannot reach; the interface holding the address the
  // rendezvous chose is the right one.
  if (auto interface = InterfaceWithAddress(node.address); interface.ok()) {
    job.node_interface = interface.value();
  }
  job.store_tls = {config.tls_ca_file, config.tls_cert_file, config.tls_key_file};
  GetLogger("launcher")
      ->info("job {}: node {} joins the rendezvous at {}{}", config.run_id, node.address,
             node.store_address, setup.server ? " (hosted here)" : "");
  setup.coordinator = std::make_unique<RendezvousCoordinator>(io, node.session);
  return setup;
}

}  // namespace ddprun
