// A node of a multi-node job, before its agent starts: where the rendezvous server is (hosting it
// here, embedded, when the endpoint is this host and nobody serves there; always with
// --rdzv_backend=etcd-v3, over etcd, where the agents' servers elect one to run the job), the
// address the other nodes reach this node at, and a MASTER_PORT reserved on it.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "ddprun/base/bound_socket.h"
#include "ddprun/etcd/etcd_rendezvous_store.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "ddprun/rendezvous/session_client.h"
#include "launch_config.h"

namespace ddprun {

struct RendezvousNode {
  // --rdzv_backend=etcd-v3: the store `hosted` keeps the job in (before it: it outlives it).
  std::unique_ptr<etcd::EtcdRendezvousStore> etcd;
  std::unique_ptr<RendezvousServer> hosted;  // set when this agent serves the rendezvous
  std::string store_address;  // the server (or several, comma-separated), as workers dial it
  std::string address;        // this node, as the others reach it
  BoundSocket master_port;    // reserved on `address`; MASTER_PORT if group rank 0
  SessionClientOptions session;
};

// UNAVAILABLE or INVALID_ARGUMENT saying what could not be set up and what to do.
Result<RendezvousNode> PrepareRendezvousNode(const LaunchConfig& config);

// After this agent's part of the job ended: keeps the hosted server serving the other nodes until
// every job on it has ended and every agent has disconnected, for at most `limit` (unbounded when
// nullopt), or until SIGINT, SIGTERM or SIGHUP.
void ServeUntilIdle(RendezvousServer& server, std::optional<std::chrono::milliseconds> limit);

}  // namespace ddprun
