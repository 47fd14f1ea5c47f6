// OpenRendezvousChannel; see client_channel.h.
#include "client_channel.h"

#include "reconnect_backoff.h"

namespace ddprun {

std::shared_ptr<grpc::Channel> OpenRendezvousChannel(const std::string& address,
                                                     const ClientSecurity& security) {
  grpc::ChannelArguments arguments;
  // A restarted server must be found again quickly: gRPC's default reconnect backoff grows to
  // two minutes. (GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is left alone: despite its name it bounds
  // how long one connection attempt may take, and a short one aborts handshakes under load.)
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                   static_cast<int>(kFirstReconnectBackoff.count()));
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                   static_cast<int>(kMaxReconnectBackoff.count()));
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!security.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = security.tls_ca_pem;
    tls.pem_cert_chain = security.tls_cert_pem;
    tls.pem_private_key = security.tls_key_pem;
    credentials = grpc::SslCredentials(tls);
  }
  return grpc::CreateCustomChannel(address, credentials, arguments);
}

void AddToken(grpc::ClientContext& context, const ClientSecurity& security) {
  if (!security.token.empty()) context.AddMetadata(kTokenMetadataKey, security.token);
}

}  // namespace ddprun
