// RendezvousServer: runs the rendezvous gRPC service (rounds, key-value store, status) on a bound
// address. Used embedded by `ddprun` and by the `ddprund` daemon.
//
// Start binds the port before returning and keeps it bound for the server's lifetime, so port 0
// yields a port that nobody else can take. Serving happens on gRPC's own threads (and, with
// start_on_first_connection, one thread that accepts connections); the object may be used and
// destroyed from any one thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/base/steady_time_source.h"
#include "ddprun/rendezvous/job_leadership.h"
#include "ddprun/rendezvous/job_store.h"
#include "ddprun/rendezvous/round_types.h"
#include "ddprun/rendezvous/shared_credentials.h"

namespace grpc {
class Service;
}

namespace ddprun {

class MetricsPage;

struct RendezvousServerOptions {
  std::string bind_host = "127.0.0.1";  // an address of this host; "0.0.0.0" for every interface
  int port = 0;                         // 0: a free port chosen by the kernel
  std::string token;                    // required on every call when not empty
  // TLS, in PEM: with a certificate and key the server speaks TLS only; with a client CA as well,
  // clients must present a certificate it signed. Not with start_on_first_connection.
  std::string tls_cert_pem;
  std::string tls_key_pem;
  std::string tls_client_ca_pem;
  KeyValueLimits limits;  // of the in-memory store
  // The jobs' store; null: one in memory, the server's own. Else a store shared with other
  // servers (etcd), which must outlive this one.
  JobStore* store = nullptr;
  // With a shared store: which server runs each job's rounds (job_leadership.h); this one runs
  // only the jobs it leads. Null: every job that joins here. Must outlive the server.
  JobLeadership* leadership = nullptr;
  // With a shared store: the jobs' store credentials as every server of the store knows them
  // (shared_credentials.h), so that a worker's store call is accepted at any of them. Null: this
  // server's own. Must outlive the server.
  SharedCredentials* shared_credentials = nullptr;
  // The embedded server's mode: the server binds and listens on its own socket, and starts gRPC
  // only when the first client connects, over plain TCP (loopback; the token still applies).
  // A job whose workers never use the store never pays gRPC's start-up time and memory.
  // Requires a numeric IPv4 bind_host (or "localhost").
  bool start_on_first_connection = false;
  // With start_on_first_connection: a socket listening already, made by another process
  // (`ddprun`, whose store this serves: on_demand_store.h), taken over instead of binding one.
  // -1: none.
  int listener_fd = -1;
  // More services on the same port (the daemon's job service); they must outlive the server and
  // check the token themselves (call_authentication.h). Not with start_on_first_connection.
  std::vector<grpc::Service*> more_services;
  // Where rounds read the time (heartbeat, last-call, join and reconnect deadlines); null: the
  // steady clock. Tests pass a ManualTime and advance it; it must outlive the server.
  SteadyTimeSource* time = nullptr;
  // Count every call by method and code for WriteMetrics (a gRPC interceptor, which each call
  // pays for): on when the metrics are served.
  bool count_calls = false;
};

class RendezvousServer {
 public:
  // Binds and starts serving. UNAVAILABLE when the address cannot be bound.
  static Result<std::unique_ptr<RendezvousServer>> Start(const RendezvousServerOptions& options);

  ~RendezvousServer();  // Shutdown(), then frees everything.
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const { return port_; }
  // "host:port", as clients dial it.
  std::string address() const;
  JobStore& store() { return *store_; }

  // No agent is connected and every job has ended (or there is none).
  bool Idle() const;
  // Forgets every job that has ended, with its keys (and, in a shared store, its record and
  // credential), so that its id may start anew at once: for a server that stops once idle. Blocks
  // on a shared store.
  void ForgetEndedJobs();
  // `on_change` runs on a gRPC thread whenever Idle() may have become true; it must not block.
  void SetChangeCallback(std::function<void()> on_change);

  // Every job it holds, as `ddprun status` shows them. Any thread.
  std::vector<JobSnapshot> Jobs() const;
  // Writes the rendezvous's metrics families onto `page` (docs/metrics.md): its jobs and their
  // ranks, `more_jobs` beside them (a job whose rounds another part of the process runs: a
  // standalone ddprun's), its calls (with count_calls), sessions and store. Any thread; link
  // ddprun_monitoring.
  void WriteMetrics(MetricsPage& page, std::vector<JobSnapshot> more_jobs = {}) const;
  // OK when the rendezvous can act: the thread that applies the rounds' deadlines runs a task
  // that reads the jobs within `bound`. UNAVAILABLE saying what did not answer otherwise.
  Status CheckHealth(std::chrono::milliseconds bound) const;

  // Stops accepting calls, fails pending ones, and waits at most `grace` for handlers to finish.
  void Shutdown(std::chrono::milliseconds grace = std::chrono::milliseconds(500));

 private:
  struct Impl;
  RendezvousServer() = default;

  std::unique_ptr<JobStore> own_store_;  // without options.store
  JobStore* store_ = nullptr;
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
};

}  // namespace ddprun
