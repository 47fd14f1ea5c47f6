// PrepareRendezvousNode and ServeUntilIdle; see rendezvous_node.h.
#include "rendezvous_node.h"

#include <sys/random.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>

#include "ddprun/base/ipv4.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/status_macros.h"
#include "node_address.h"

namespace ddprun {
namespace {

std::string NodeId() {
  uint32_t nonce = 0;
  if (::getrandom(&nonce, sizeof(nonce), 0) != sizeof(nonce)) nonce = 0;
  char id[32];
  std::snprintf(id, sizeof(id), "%08x", nonce);
  return HostName() + "-" + std::to_string(::getpid()) + "-" + id;
}

// The options of a server this agent hosts on `bind_host:port`: the token, and TLS as the node's
// files give it (INVALID_ARGUMENT when a CA is given without a server certificate).
Result<RendezvousServerOptions> HostedServerOptions(const LaunchConfig& config,
                                                    const std::string& bind_host, int port) {
  RendezvousServerOptions options;
  options.bind_host = bind_host;
  options.port = port;
  options.token = config.security.token;
  if (!config.security.tls_ca_pem.empty()) {
    if (config.security.tls_cert_pem.empty()) {
      return InvalidArgumentError(
          "this node hosts the rendezvous on " + bind_host + ":" + std::to_string(port) +
          " with TLS: give it a server certificate with --tls-cert and --tls-key");
    }
    options.tls_cert_pem = config.security.tls_cert_pem;
    options.tls_key_pem = config.security.tls_key_pem;
    options.tls_client_ca_pem = config.security.tls_ca_pem;
  }
  return options;
}

void WarnWithoutToken(const LaunchConfig& config, const std::string& address, int port) {
  if (config.security.token.empty() && !IsLoopbackAddress(address)) {
    std::fprintf(stderr,
                 "ddprun: warning: the rendezvous server on %s:%d has no token: anyone who can "
                 "reach it can join or disturb the job; pass --token-file\n",
                 address.c_str(), port);
  }
}

// The embedded server on the endpoint, when the endpoint is this host and nobody serves there.
Result<std::unique_ptr<RendezvousServer>> MaybeHost(const LaunchConfig& config,
                                                    const std::string& endpoint_address) {
  if (!IsLocalAddress(endpoint_address)) return std::unique_ptr<RendezvousServer>();
  if (auto probe = BoundSocket::Bind(endpoint_address, config.rdzv_port); !probe.ok()) {
    // Someone serves there already (ddprund, or another agent of this host): use it. (A bind
    // that succeeds may still lose a race with another agent below; that is fine too.)
    GetLogger("launcher")->info("not hosting the rendezvous: {}", probe.status().message());
    return std::unique_ptr<RendezvousServer>();
  }
  ASSIGN_OR_RETURN(RendezvousServerOptions options,
                   HostedServerOptions(config, endpoint_address, config.rdzv_port));
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    GetLogger("launcher")->info("not hosting the rendezvous: {}", server.status().message());
    return std::unique_ptr<RendezvousServer>();
  }
  WarnWithoutToken(config, endpoint_address, config.rdzv_port);
  return std::move(server).value();
}

// This node's address toward `endpoint_address:port` (the server, or an etcd member), or
// --local_addr resolved.
Result<std::string> NodeAddress(const LaunchConfig& config, const std::string& endpoint_address,
                                int port) {
  if (config.local_addr.empty()) {
    auto route = SourceAddressToward(endpoint_address, port);
    if (!route.ok()) return UnavailableError("--rdzv_endpoint: " + route.status().message());
    return route.value();
  }
  auto resolved = ResolveIPv4(config.local_addr);
  if (!resolved.ok()) return InvalidArgumentError("--local_addr: " + resolved.status().message());
  return resolved.value();
}

// --rdzv_backend=etcd-v3: the job's store in etcd, and this agent's server over it on this
// node's address, advertised in the job's leader key when it leads, so that the other agents'
// servers send their agents to it.
Result<std::unique_ptr<RendezvousServer>> HostOverEtcd(const LaunchConfig& config,
                                                       const std::string& address,
                                                       etcd::EtcdRendezvousStore& store) {
  ASSIGN_OR_RETURN(RendezvousServerOptions options, HostedServerOptions(config, address, 0));
  options.store = store.jobs.get();
  options.leadership = store.leadership.get();
  options.shared_credentials = store.credentials.get();
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    return UnavailableError("cannot serve the rendezvous on " + address + ": " +
                            server.status().message() + "; check --local_addr");
  }
  store.leadership->Advertise(server.value()->address());
  WarnWithoutToken(config, address, server.value()->port());
  return std::move(server).value();
}

// "ip:port" of every --rdzv_endpoint, comma-separated, as the session and the workers' store
// client dial them.
Result<std::string> ResolvedEndpoints(const LaunchConfig& config) {
  std::string list;
  for (const auto& [host, port] : config.rdzv_endpoints) {
    auto address = ResolveIPv4(host);
    if (!address.ok()) {
      return InvalidArgumentError("--rdzv_endpoint: " + address.status().message());
    }
    list += (list.empty() ? "" : ",") + address.value() + ":" + std::to_string(port);
  }
  return list;
}

}  // namespace

Result<RendezvousNode> PrepareRendezvousNode(const LaunchConfig& config) {
  auto endpoint_address = ResolveIPv4(config.rdzv_host);
  if (!endpoint_address.ok()) {
    return InvalidArgumentError("--rdzv_endpoint: " + endpoint_address.status().message());
  }
  ASSIGN_OR_RETURN(const std::string address,
                   NodeAddress(config, endpoint_address.value(), config.rdzv_port));
  std::unique_ptr<etcd::EtcdRendezvousStore> store;
  std::unique_ptr<RendezvousServer> hosted;
  std::string servers = endpoint_address.value() + ":" + std::to_string(config.rdzv_port);
  if (config.rdzv_on_etcd) {
    ASSIGN_OR_RETURN(std::string members, ResolvedEndpoints(config));
    const std::string holder =
        "ddprun agent on " + HostName() + ", pid " + std::to_string(::getpid());
    // This server serves one job: its waits watch that job's keys, not every job's.
    auto opened =
        etcd::OpenEtcdRendezvousStore(etcd::EtcdSettings{.endpoints = SplitCommas(members)},
                                      "/ddprun/", holder, etcd::EtcdJobStore::WatchScope::kEachJob);
    if (!opened.ok()) {
      return UnavailableError("--rdzv_backend=etcd-v3: " + opened.status().message());
    }
    store = std::make_unique<etcd::EtcdRendezvousStore>(std::move(opened).value());
    ASSIGN_OR_RETURN(hosted, HostOverEtcd(config, address, *store));
    servers = hosted->address();
  } else if (config.rdzv_endpoints.size() > 1) {
    // With several endpoints the daemons serve the job: this agent never hosts it.
    ASSIGN_OR_RETURN(servers, ResolvedEndpoints(config));
  } else {
    ASSIGN_OR_RETURN(hosted, MaybeHost(config, endpoint_address.value()));
  }

  auto master_port = BoundSocket::Bind(address, 0);
  if (!master_port.ok()) {
    return UnavailableError("cannot reserve MASTER_PORT on " + address + ": " +
                            master_port.status().message() + "; check --local_addr");
  }

  RendezvousNode node{
      std::move(store), std::move(hosted), servers, address, std::move(master_port).value(), {}};
  SessionClientOptions& session = node.session;
  session.address = node.store_address;
  session.security = config.security;
  session.job_id = config.run_id;
  session.settings = config.rdzv_settings;
  session.node = {NodeId(),
                  address,
                  config.nproc_per_node,
                  node.master_port.port(),
                  config.node_rank_given ? config.node_rank : -1,
                  config.scheduler};
  // Three heartbeats per timeout: one lost or late heartbeat never loses a node.
  session.heartbeat_interval = config.rdzv_settings.heartbeat_timeout / 3;
  session.reconnect_timeout = config.rdzv_settings.join_timeout;
  return node;
}

void ServeUntilIdle(RendezvousServer& server, std::optional<std::chrono::milliseconds> limit) {
  boost::asio::io_context io;
  boost::asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&io](const boost::system::error_code& error, int) {
    if (!error) io.stop();
  });
  boost::asio::steady_timer timer(io);
  if (limit) {
    timer.expires_after(*limit);
    timer.async_wait([&io](const boost::system::error_code& error) {
      if (!error) io.stop();
    });
  }
  auto check = [&io, &server] {
    if (server.Idle()) io.stop();
  };
  server.SetChangeCallback([&io, check] { boost::asio::post(io, check); });
  boost::asio::post(io, check);
  io.run();
  server.SetChangeCallback(nullptr);  // under the server's lock: no post to `io` after this
}

}  // namespace ddprun
