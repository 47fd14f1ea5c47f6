// RendezvousServer; see rendezvous_server.h.
#include "ddprun/rendezvous/rendezvous_server.h"

#include <grpcpp/grpcpp.h>

#include "rendezvous_service.h"

namespace ddprun {

struct RendezvousServer::Impl {
  std::unique_ptr<RendezvousService> service;
  std::unique_ptr<grpc::Server> server;
  bool shut_down = false;
};

Result<std::unique_ptr<RendezvousServer>> RendezvousServer::Start(
    const RendezvousServerOptions& options) {
  std::unique_ptr<RendezvousServer> self(new RendezvousServer());
  self->store_ = std::make_unique<KeyValueStore>(options.limits);
  self->impl_ = std::make_unique<Impl>();
  self->impl_->service = std::make_unique<RendezvousService>(*self->store_, options.token);
  self->host_ = options.bind_host;

  const std::string listen = options.bind_host + ":" + std::to_string(options.port);
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &self->port_);
  builder.RegisterService(self->impl_->service.get());
  // Values may be up to KeyValueLimits::max_value_bytes; leave room for the envelope.
  builder.SetMaxReceiveMessageSize(static_cast<int>(options.limits.max_value_bytes) + (64 << 10));
  // SO_REUSEPORT would let a second server bind the same port and steal half the connections.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  self->impl_->server = builder.BuildAndStart();
  if (!self->impl_->server || self->port_ == 0) {
    return UnavailableError("the rendezvous server could not bind " + listen +
                            "; choose another --port or free that one");
  }
  return self;
}

RendezvousServer::~RendezvousServer() { Shutdown(); }

std::string RendezvousServer::address() const { return host_ + ":" + std::to_string(port_); }

void RendezvousServer::Shutdown(std::chrono::milliseconds grace) {
  if (!impl_ || impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->server->Shutdown(std::chrono::system_clock::now() + grace);
  impl_->server->Wait();
}

}  // namespace ddprun
