// SetUpNetworkNode: the network launcher's node setup (network_launcher.h): a node of a
// multi-node job, or one node whose rendezvous serves the operators' endpoint (--metrics_port).
#pragma once

#include <boost/asio/io_context.hpp>

#include "node_setup.h"

namespace ddprun {

// Many nodes: the rendezvous at --rdzv_endpoint (hosted here when this host serves it and nobody
// does yet), this node's address, PyTorch's store served on the MASTER_PORT it offers, and the
// session to the server.
// One node: the store served here in-process. Either way, with --metrics_port, the operators'
// endpoint where this node hosts the rendezvous. A NodeSetUp (node_setup.h).
Result<NodeSetup> SetUpNetworkNode(const LaunchConfig& config, boost::asio::io_context& io,
                                   JobEnvironment& job);

}  // namespace ddprun
