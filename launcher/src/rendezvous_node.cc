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
  RendezvousServerOptions options;
  options.bind_host = endpoint_address;
  options.port = config.rdzv_port;
  options.token = config.security.token;
  if (!config.security.tls_ca_pem.empty()) {
    if (config.security.tls_cert_pem.empty()) {
      return InvalidArgumentError(
          "this node hosts the rendezvous on " + endpoint_address + ":" +
          std::to_string(config.rdzv_port) +
          " with TLS: give it a server certificate with --tls-cert and --tls-key");
    }
    options.tls_cert_pem = config.security.tls_cert_pem;
    options.tls_key_pem = config.security.tls_key_pem;
    options.tls_client_ca_pem = config.security.tls_ca_pem;
  }
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    GetLogger("launcher")->info("not hosting the rendezvous: {}", server.status().message());
    return std::unique_ptr<RendezvousServer>();
  }
  if (config.security.token.empty() && !IsLoopbackAddress(endpoint_address)) {
    std::fprintf(stderr,
                 "ddprun: warning: the rendezvous server on %s:%d has no token: anyone who can "
                 "reach it can join or disturb the job; pass --token-file\n",
                 endpoint_address.c_str(), config.rdzv_port);
  }
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
  // With several endpoints the daemons serve the job: this agent never hosts it.
  std::unique_ptr<RendezvousServer> hosted;
  if (config.rdzv_endpoints.size() <= 1) {
    ASSIGN_OR_RETURN(hosted, MaybeHost(config, endpoint_address.value()));
  }
  std::string servers = endpoint_address.value() + ":" + std::to_string(config.rdzv_port);
  if (config.rdzv_endpoints.size() > 1) {
    ASSIGN_OR_RETURN(servers, ResolvedEndpoints(config));
  }

  std::string address = config.local_addr;
  if (address.empty()) {
    auto route = SourceAddressToward(endpoint_address.value(), config.rdzv_port);
    if (!route.ok()) return UnavailableError("--rdzv_endpoint: " + route.status().message());
    address = route.value();
  } else if (auto resolved = ResolveIPv4(address); resolved.ok()) {
    address = resolved.value();
  } else {
    return InvalidArgumentError("--local_addr: " + resolved.status().message());
  }
  auto master_port = BoundSocket::Bind(address, 0);
  if (!master_port.ok()) {
    return UnavailableError("cannot reserve MASTER_PORT on " + address + ": " +
                            master_port.status().message() + "; check --local_addr");
  }

  RendezvousNode node{std::move(hosted), servers, address, std::move(master_port).value(), {}};
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
