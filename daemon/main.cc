// `ddprund`: the host daemon. Parses its command line, serves the rendezvous service and the job
// service (jobs submitted with `ddprun --hosts=...`) on --bind:--port, and with --metrics-port
// the operators' HTTP endpoint (monitoring_routes.h), until SIGTERM or SIGINT, then cancels the
// jobs it runs (each agent's bounded stop), and shuts down (pending calls are failed, not dropped).
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "daemon_config.h"
#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/etcd/etcd_job_submissions.h"
#include "ddprun/etcd/etcd_rendezvous_store.h"
#include "ddprun/monitoring/http_endpoint.h"
#include "ddprun/rendezvous/monitoring_routes.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "job_service.h"
#include "job_table.h"

namespace {

// The `ddprun` beside this ddprund, as installed.
std::string AgentBesideDaemon() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "/usr/bin/ddprun";
  std::string self(path, static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + "ddprun";
}

// With --store=etcd: the rendezvous's store in etcd, and which submission runs each job id among
// the daemons on it.
struct EtcdStore {
  ddprun::etcd::EtcdRendezvousStore rendezvous;
  std::unique_ptr<ddprun::etcd::EtcdJobSubmissions> submissions;
};

// Who this daemon is, in its leader keys: unique while it lives.
std::string LeaderHolderName() {
  char host[256] = {};
  if (::gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "?");
  return std::string("ddprund on ") + host + ", pid " + std::to_string(::getpid());
}

ddprun::Result<EtcdStore> OpenEtcdStore(const ddprun::DaemonStoreConfig& config) {
  using namespace ddprun;
  etcd::EtcdSettings settings;
  settings.endpoints = config.etcd_endpoints;
  settings.user = config.etcd_user;
  settings.password = config.etcd_password;
  settings.ca_pem = config.etcd_ca_pem;
  settings.cert_pem = config.etcd_cert_pem;
  settings.key_pem = config.etcd_key_pem;
  const std::string holder = LeaderHolderName();
  auto rendezvous = etcd::OpenEtcdRendezvousStore(std::move(settings), config.etcd_prefix, holder,
                                                  etcd::EtcdJobStore::WatchScope::kEveryJob);
  if (!rendezvous.ok()) return rendezvous.status();
  EtcdStore store{.rendezvous = std::move(rendezvous).value(), .submissions = nullptr};
  store.submissions = std::make_unique<etcd::EtcdJobSubmissions>(
      *store.rendezvous.client,
      etcd::JobSubmissionsSettings{.prefix = config.etcd_prefix, .holder = holder});
  return store;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ddprun;
  SetLogLineForm(LogLineForm::kTimestamped);  // a daemon's log: its lines are read later
  auto parsed = ParseDaemonCommandLine(std::vector<std::string>(argv + 1, argv + argc));
  if (auto* help = std::get_if<DaemonHelp>(&parsed)) {
    std::cout << help->text;
    return 0;
  }
  if (auto* error = std::get_if<DaemonUsageError>(&parsed)) {
    std::fprintf(stderr, "ddprund: error: %s\n", error->message.c_str());
    return 2;
  }
  const DaemonConfig& config = std::get<DaemonConfig>(parsed);
  // Writing a job's input after its agent died must fail, not kill the daemon.
  ::signal(SIGPIPE, SIG_IGN);

  // Block the stop signals before any thread starts, so that every thread inherits the mask and
  // only sigwait below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  if (int error = pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr); error != 0) {
    std::fprintf(stderr, "ddprund: error: blocking SIGTERM and SIGINT: %s\n", std::strerror(error));
    return 1;
  }

  EtcdStore etcd_store;
  if (config.store.etcd) {
    auto opened = OpenEtcdStore(config.store);
    if (!opened.ok()) {
      std::fprintf(stderr, "ddprund: error: %s\n", opened.status().message().c_str());
      return 1;
    }
    etcd_store = std::move(opened).value();
  }

  JobTableOptions jobs;
  jobs.agent_program = config.agent_program.empty() ? AgentBesideDaemon() : config.agent_program;
  jobs.token_file = config.token_file;
  jobs.allow_root_jobs = config.allow_root_jobs;
  if (etcd::EtcdJobSubmissions* submissions = etcd_store.submissions.get()) {
    jobs.on_ended = [submissions](const std::string& job_id) { submissions->LetGo(job_id); };
  }
  JobTable job_table(jobs);  // destroyed first: its jobs' ends still reach etcd_store
  JobService job_service(job_table, config.token,
                         SharedJobStore{.description = etcd_store.rendezvous.description,
                                        .submissions = etcd_store.submissions.get()});

  RendezvousServerOptions options;
  options.store = etcd_store.rendezvous.jobs.get();
  options.leadership = etcd_store.rendezvous.leadership.get();
  options.shared_credentials = etcd_store.rendezvous.credentials.get();
  options.more_services = {&job_service};
  options.bind_host = config.bind;
  options.port = config.port;
  options.token = config.token;
  options.tls_cert_pem = config.tls_cert_pem;
  options.tls_key_pem = config.tls_key_pem;
  options.tls_client_ca_pem = config.tls_ca_pem;
  options.count_calls = config.metrics_port >= 0;
  auto server = RendezvousServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "ddprund: error: %s\n", server.status().message().c_str());
    return 1;
  }
  // Readiness ends with the first stop signal, before the jobs are cancelled.
  std::atomic<bool> stopping{false};
  std::unique_ptr<HttpEndpoint> metrics;
  if (config.metrics_port >= 0) {
    MonitoredRendezvous monitored;
    monitored.server = server.value().get();
    monitored.stopping = &stopping;
    if (etcd_store.rendezvous.client) {
      etcd::EtcdClient* client = etcd_store.rendezvous.client.get();
      monitored.check_store = [client] { return client->MemberStatus().status(); };
    }
    HttpEndpointOptions http;
    http.bind_host = config.metrics_bind;
    http.port = config.metrics_port;
    http.token = config.token;
    http.tls_cert_pem = config.tls_cert_pem;  // HTTPS where the rendezvous speaks TLS
    http.tls_key_pem = config.tls_key_pem;
    http.routes = MonitoringRoutes(monitored);
    auto started = HttpEndpoint::Start(std::move(http));
    if (!started.ok()) {
      std::fprintf(stderr, "ddprund: error: --metrics-port: %s\n",
                   started.status().message().c_str());
      return 1;
    }
    metrics = std::move(started).value();
    std::printf("ddprund metrics on %s://%s:%d/metrics\n",
                config.tls_cert_pem.empty() ? "http" : "https", config.metrics_bind.c_str(),
                metrics->port());
    std::fflush(stdout);
  }

  const int port = server.value()->port();
  if (!config.port_file.empty()) {
    if (Status written = WriteFileAtomically(config.port_file, std::to_string(port) + "\n");
        !written.ok()) {
      std::fprintf(stderr, "ddprund: error: --port-file: %s\n", written.message().c_str());
      return 1;
    }
  }
  std::printf("ddprund listening on %s:%d\n", config.bind.c_str(), port);
  if (std::fflush(stdout) != 0) {
    // Whoever waits for that line will not see it; the server still serves.
    const int error = errno;
    GetLogger("rendezvous")
        ->warn("{}", ErrnoError("writing the listening line to stdout", error).message());
  }

  int signal_number = 0;
  if (int error = sigwait(&stop_signals, &signal_number); error != 0) {
    std::fprintf(stderr, "ddprund: error: waiting for SIGTERM or SIGINT: %s; shutting down\n",
                 std::strerror(error));
    server.value()->Shutdown();
    return 1;
  }
  GetLogger("rendezvous")->info("received signal {}; shutting down", signal_number);
  stopping = true;
  job_table.CancelAll();
  server.value()->Shutdown();
  return 0;
}
