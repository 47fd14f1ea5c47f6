// AuthenticateCall and CallerIdentity; see call_authentication.h.
#include "ddprun/rendezvous/call_authentication.h"

#include <grpcpp/security/auth_context.h>

#include <string_view>

#include "ddprun/base/logging.h"

namespace ddprun {
namespace {

// Compares in time independent of where the strings differ, so the token cannot be guessed byte
// by byte from response times.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace

grpc::Status AuthenticateCall(const grpc::ServerContextBase& context, const std::string& token) {
  if (token.empty()) return grpc::Status::OK;
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kTokenMetadataKey);
  if (it != metadata.end() &&
      ConstantTimeEquals(std::string_view(it->second.data(), it->second.size()), token)) {
    return grpc::Status::OK;
  }
  const std::string what = it == metadata.end() ? "missing" : "wrong";
  GetLogger("rendezvous")->warn("refused a call from {}: {} token", CallerIdentity(context), what);
  return {grpc::StatusCode::UNAUTHENTICATED,
          "the server requires its token (--token-file for ddprun, DDPRUN_TOKEN for workers); "
          "this call had a " +
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
