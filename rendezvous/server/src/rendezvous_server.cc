// RendezvousServer; see rendezvous_server.h.
#include "ddprun/rendezvous/rendezvous_server.h"

#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <thread>

#include "ddprun/base/bound_socket.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/key_value_store.h"
#include "rendezvous_metrics.h"
#include "rendezvous_service.h"
#include "rpc_counts.h"

namespace ddprun {

struct RendezvousServer::Impl {
  std::unique_ptr<RpcCounts> calls;  // with count_calls; outlives the service, which counts
  std::unique_ptr<RendezvousService> service;
  std::vector<grpc::Service*> more_services;
  int max_receive_bytes = 0;
  // Made into credentials only in BuildServer: creating any credentials starts gRPC (grpc_init
  // and its threads), which the on-first-connection mode defers.
  std::optional<grpc::SslServerCredentialsOptions> tls;

  Mutex mu;
  std::unique_ptr<grpc::Server> server GUARDED_BY(mu);
  bool shut_down GUARDED_BY(mu) = false;

  // start_on_first_connection only: our listening socket, the thread that accepts on it, and
  // the gRPC entry point that takes each accepted connection.
  std::optional<BoundSocket> listener;
  std::thread acceptor;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> connections GUARDED_BY(mu);

  std::unique_ptr<grpc::Server> BuildServer(const std::string& listen, int* selected_port)
      REQUIRES(mu) {
    grpc::ServerBuilder builder;
    if (listen.empty()) {
      connections = builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
          grpc::InsecureServerCredentials());
    } else {
      builder.AddListeningPort(
          listen, tls ? grpc::SslServerCredentials(*tls) : grpc::InsecureServerCredentials(),
          selected_port);
      // SO_REUSEPORT would let a second server bind the same port and take half the calls.
      builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    }
    builder.RegisterService(service.get());
    for (grpc::Service* more : more_services) builder.RegisterService(more);
    builder.SetMaxReceiveMessageSize(max_receive_bytes);
    if (calls) {
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> counting;
      counting.push_back(RpcCounts::Interceptors(*calls));
      builder.experimental().SetInterceptorCreators(std::move(counting));
    }
    return builder.BuildAndStart();
  }

  // Hands every accepted connection to gRPC, starting it on the first one. Ends when Shutdown
  // shuts the listening socket down.
  void AcceptLoop() {
    while (true) {
      // gRPC's transport needs a non-blocking socket: a blocking read would stall its poller.
      const int fd = ::accept4(listener->fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // the listening socket was shut down
      }
      const int on = 1;
      if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0) {
        // Not fatal: the connection works, only without TCP_NODELAY. Nothing to return it to.
        const int error = errno;
        GetLogger("rendezvous")
            ->warn("{}",
                   ErrnoError("setting TCP_NODELAY on an accepted connection", error).message());
      }
      MutexLock lock(mu);
      if (shut_down) {
        ::close(fd);
        return;
      }
      if (!server) server = BuildServer("", nullptr);
      if (!server) {
        GetLogger("rendezvous")->error("the rendezvous server could not start gRPC");
        ::close(fd);
        continue;
      }
      grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters connection;
      connection.listener_fd = listener->fd();
      connection.fd = fd;  // gRPC takes ownership
      connections->HandleNewConnection(&connection);
    }
  }
};

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(
    const RendezvousServerOptions& options) {
  std::unique_ptr<RendezvousServer> self(new RendezvousServer());
  if (options.store) {
    self->store_ = options.store;
  } else {
    self->own_store_ = std::make_unique<KeyValueStore>(options.limits);
    self->store_ = self->own_store_.get();
  }
  self->impl_ = std::make_unique<Impl>();
  Impl& impl = *self->impl_;
  if (options.count_calls) impl.calls = std::make_unique<RpcCounts>();
  impl.service = std::make_unique<RendezvousService>(
      *self->store_, options.token, options.time ? *options.time : SteadyTimeSource::Real(),
      options.leadership, impl.calls.get(), options.shared_credentials);
  impl.more_services = options.more_services;
  // Values may be up to KeyValueLimits::max_value_bytes; leave room for the envelope.
  impl.max_receive_bytes = static_cast<int>(options.limits.max_value_bytes) + (64 << 10);
  self->host_ = options.bind_host;
  self->port_ = options.port;
  if (!options.tls_cert_pem.empty()) {
    if (options.start_on_first_connection) {
      return InvalidArgumentError("TLS is not available for the on-first-connection server");
    }
    grpc::SslServerCredentialsOptions tls(
        options.tls_client_ca_pem.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    tls.pem_root_certs = options.tls_client_ca_pem;
    tls.pem_key_cert_pairs.push_back({options.tls_key_pem, options.tls_cert_pem});
    impl.tls = std::move(tls);
  }

  if (options.start_on_first_connection) {
    auto listener = options.listener_fd >= 0 ? BoundSocket::Adopt(options.listener_fd)
                                             : BoundSocket::Bind(options.bind_host, options.port);
    if (!listener.ok()) {
      return Status(listener.status().code(),
                    "the rendezvous server: " + listener.status().message());
    }
    RETURN_IF_ERROR(listener->Listen());
    self->port_ = listener->port();
    impl.listener.emplace(std::move(listener).value());
    impl.acceptor = std::thread([&impl] { impl.AcceptLoop(); });
    return self;
  }

  const std::string listen = options.bind_host + ":" + std::to_string(options.port);
  bool built = false;
  {
    MutexLock lock(impl.mu);  // no other thread yet: for the analysis, which cannot know that
    impl.server = impl.BuildServer(listen, &self->port_);
    built = impl.server != nullptr;
  }
  if (!built || self->port_ == 0) {
    return UnavailableError("the rendezvous server could not bind " + listen +
                            "; choose another --port or free that one");
  }
  return self;
}

RendezvousServer::~RendezvousServer() { Shutdown(); }

std::string RendezvousServer::address() const { return host_ + ":" + std::to_string(port_); }

bool RendezvousServer::Idle() const { return impl_->service->Idle(); }

void RendezvousServer::ForgetEndedJobs() { impl_->service->ForgetEndedJobs(); }

void RendezvousServer::SetChangeCallback(std::function<void()> on_change) {
  impl_->service->SetChangeCallback(std::move(on_change));
}

std::vector<JobSnapshot> RendezvousServer::Jobs() const { return impl_->service->Jobs(); }

void RendezvousServer::WriteMetrics(MetricsPage& page, std::vector<JobSnapshot> more_jobs) const {
  RendezvousGauges gauges;
  gauges.open_sessions = impl_->service->open_sessions();
  gauges.store = store_->Usage();
  gauges.store_waiters = store_->pending_waiters();
  std::vector<JobSnapshot> jobs = impl_->service->Jobs();
  jobs.insert(jobs.end(), std::make_move_iterator(more_jobs.begin()),
              std::make_move_iterator(more_jobs.end()));
  WriteRendezvousMetrics(jobs,
                         impl_->calls ? impl_->calls->Snapshot() : std::vector<RpcCounts::Count>{},
                         gauges, page);
}

Status RendezvousServer::CheckHealth(std::chrono::milliseconds bound) const {
  return impl_->service->CheckResponsive(bound);
}

void RendezvousServer::Shutdown(std::chrono::milliseconds grace) {
  if (!impl_) return;
  {
    MutexLock lock(impl_->mu);
    if (impl_->shut_down) return;
    impl_->shut_down = true;
  }
  if (impl_->listener) {
    // Wakes the acceptor's accept(). Should it fail, the join below may not return: said first.
    if (::shutdown(impl_->listener->fd(), SHUT_RDWR) != 0) {
      const int error = errno;
      GetLogger("rendezvous")
          ->error("{}; the accepting thread may not stop",
                  ErrnoError("shutting down the rendezvous server's listening socket", error)
                      .message());
    }
    impl_->acceptor.join();
    impl_->listener.reset();
  }
  grpc::Server* server = nullptr;
  {
    // Final once shut_down is set: the acceptor builds the server only before that.
    MutexLock lock(impl_->mu);
    server = impl_->server.get();
  }
  if (server) {
    server->Shutdown(std::chrono::system_clock::now() + grace);
    server->Wait();
  }
}

}  // namespace ddprun
