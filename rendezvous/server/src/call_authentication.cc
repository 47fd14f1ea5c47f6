// AuthenticateCall and CallerIdentity; see call_authentication.h.
#include "ddprun/rendezvous/call_authentication.h"

#include <grpcpp/security/auth_context.h>

#include <string_view>

#include "ddprun/base/logging.h"
#include "ddprun/base/secret_token.h"

namespace ddprun {

grpc::Status AuthenticateCall(const grpc::ServerContextBase& context, const std::string& token,
                              const std::function<bool(std::string_view)>& also_accepted) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTokenMetadataKey);
  if (it != metadata.end()) {
    const std::string_view presented(it->second.data(), it->second.size());
    if (SecretsEqual(presented, token) || (also_accepted && also_accepted(presented))) {
      return grpc::Status::OK;
    }
  }
  const std::string what = it == metadata.end() ? "missing" : "wrong";
  GetLogger("rendezvous")->warn("refused a call from {}: {} token", CallerIdentity(context), what);
  return {grpc::StatusCode::UNAUTHENTICATED,
          std::string("the server requires its token (--token-file for ddprun), or for a job's "
                      "store keys that job's credential (DDPRUN_TOKEN, while the job runs); "
                      "this call had a ") +
              what + " one"};
}

std::string CallerIdentity(const grpc::ServerContextBase& context) {
  std::string identity = context.peer();
  auto auth = context.auth_context();
  if (auth && auth->IsPeerAuthenticated()) {
    for (const auto& name : auth->FindPropertyValues("x509_common_name")) {
      identity += " (certificate CN=" + std::string(name.data(), name.size()) + ")";
      break;
    }
  }
  return identity;
}

}  // namespace ddprun
