// Who may call the daemon's services, and who did: the token check every service of ddprund
// applies to every call, and the caller's identity as the daemon logs it.
#pragma once

#include <grpcpp/server_context.h>

#include <functional>
#include <string>
#include <string_view>

#include "ddprun/base/client_security.h"  // kTokenMetadataKey

namespace ddprun {

// OK when `token` is empty or the call carries it, or carries a token `also_accepted` accepts
// (a job's store credential, for that job's store calls); else UNAUTHENTICATED (logged with the
// caller's address), saying whether the token was missing or wrong. Compares `token` in constant
// time; `also_accepted` must too.
grpc::Status AuthenticateCall(const grpc::ServerContextBase& context, const std::string& token,
                              const std::function<bool(std::string_view)>& also_accepted = {});

// "ipv4:10.0.0.7:51234", and " (certificate CN=name)" when the caller presented a certificate.
std::string CallerIdentity(const grpc::ServerContextBase& context);

}  // namespace ddprun
