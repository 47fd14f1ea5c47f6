// The gRPC side of ClientSecurity, shared by every client of the rendezvous service.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "ddprun/base/client_security.h"

namespace ddprun {

// A channel to `address` ("host:port"), with TLS when security asks for it.
std::shared_ptr<grpc::Channel> OpenRendezvousChannel(const std::string& address,
                                                     const ClientSecurity& security);

// Adds the token to a call's metadata, when there is one.
void AddToken(grpc::ClientContext& context, const ClientSecurity& security);

}  // namespace ddprun
