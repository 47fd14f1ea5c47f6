// SetUpNetworkNode; see network_node_setup.h.
#include "network_node_setup.h"

#include <cstdio>

#include "ddprun/agent/rendezvous_coordinator.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/secret_token.h"
#include "ddprun/base/status_macros.h"
#include "metrics_endpoint.h"
#include "node_address.h"
#include "rendezvous_node.h"

namespace ddprun {
namespace {

// The rendezvous or store served here, over etcd or not, and the operators' endpoint over it.
class NetworkServices final : public NodeServices {
 public:
  NetworkServices(const LaunchConfig& config, std::unique_ptr<etcd::EtcdRendezvousStore> etcd,
                  std::unique_ptr<RendezvousServer> server)
      : config_(config), etcd_(std::move(etcd)), server_(std::move(server)) {}

  RendezvousServer* server() const { return server_.get(); }
  void set_metrics(std::unique_ptr<HttpEndpoint> metrics) { metrics_ = std::move(metrics); }

  void Finish(bool interrupted) override {
    ServeTheOtherNodes(interrupted);
    metrics_.reset();
    server_.reset();
  }

 private:
  // The other nodes still need a rendezvous this node serves: after this node left (a signal),
  // until the job ends; after the job ended, until every node has heard it (close_timeout at
  // most).
  void ServeTheOtherNodes(bool interrupted) {
    if (!config_.multi_node || server_ == nullptr) return;
    if (!server_->Idle()) {
      if (interrupted) {
        std::fprintf(stderr,
                     "ddprun: this node left job %s; serving its rendezvous for the other nodes "
                     "until the job ends (signal again to stop now)\n",
                     config_.run_id.c_str());
      }
      ServeUntilIdle(*server_, interrupted ? std::nullopt
                                           : std::optional(config_.rdzv_settings.close_timeout));
    }
    // Over etcd (etcd-v3) the job's keys, record and credential outlive this server unless it
    // forgets them: its id is free for the next run at once.
    if (config_.rdzv_on_etcd) server_->ForgetEndedJobs();
  }

  // Destroyed in reverse order: the pages, which read the server, first; etcd, where the server
  // keeps the job, last.
  const LaunchConfig& config_;
  std::unique_ptr<etcd::EtcdRendezvousStore> etcd_;
  std::unique_ptr<RendezvousServer> server_;
  std::unique_ptr<HttpEndpoint> metrics_;
};

Result<NodeSetup> SetUpServedSingleNode(const LaunchConfig& config, boost::asio::io_context& io,
                                        JobEnvironment& job) {
  ASSIGN_OR_RETURN(const std::string token, NewSecretToken("the store token"));
  RendezvousServerOptions server_options;
  server_options.bind_host = "127.0.0.1";
  server_options.token = token;
  server_options.start_on_first_connection = true;
  ASSIGN_OR_RETURN(auto server, RendezvousServer::Start(server_options));
  SingleNodeStore store;
  store.address = server->address();
  store.token = token;
  store.services = std::make_unique<NetworkServices>(config, nullptr, std::move(server));
  std::unique_ptr<LocalJobRecord> record;
  if (config.metrics_port) {
    NodeDescription node;
    node.node_id = HostName();
    node.host = node.node_id;
    node.nproc = config.nproc_per_node;
    node.scheduler = config.scheduler;
    record = std::make_unique<LocalJobRecord>(config.run_id, node, config.rdzv_settings);
  }
  return SetUpSingleNode(config, io, job, std::move(store), std::move(record));
}

Result<NodeSetup> SetUpMultiNode(const LaunchConfig& config, boost::asio::io_context& io,
                                 JobEnvironment& job) {
  ASSIGN_OR_RETURN(auto node, PrepareRendezvousNode(config));
  NodeSetup setup;
  const bool hosted = node.hosted != nullptr;
  setup.services =
      std::make_unique<NetworkServices>(config, std::move(node.etcd), std::move(node.hosted));
  // PyTorch's store listens before this node joins: in a round where it is group rank 0 every
  // rank, on every node, finds it there (TORCHELASTIC_USE_AGENT_STORE=True, as torchrun 2.x's
  // group rank 0 agent serves it). Each node serves its own, idle where another is rank 0: a new
  // round may make any node rank 0, and the store then lives while its node does.
  ASSIGN_OR_RETURN(setup.torch_store, TorchStoreServer::Start(io, std::move(node.master_port)));
  job.agent_store = true;
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
             node.store_address, hosted ? " (hosted here)" : "");
  setup.coordinator = std::make_unique<RendezvousCoordinator>(io, node.session);
  return setup;
}

}  // namespace

Result<NodeSetup> SetUpNetworkNode(const LaunchConfig& config, boost::asio::io_context& io,
                                   JobEnvironment& job) {
  ASSIGN_OR_RETURN(NodeSetup setup, config.multi_node ? SetUpMultiNode(config, io, job)
                                                      : SetUpServedSingleNode(config, io, job));
  auto& services = static_cast<NetworkServices&>(*setup.services);
  ASSIGN_OR_RETURN(auto metrics,
                   ServeLauncherMetrics(config, services.server(), setup.record.get(), io));
  services.set_metrics(std::move(metrics));
  return setup;
}

}  // namespace ddprun
