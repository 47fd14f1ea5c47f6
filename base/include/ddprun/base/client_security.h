// How a client proves itself to the rendezvous server and checks the server: the token sent with
// every call, and TLS. Plain data, read from files once (see security_files.h).
#pragma once

#include <string>

namespace ddprun {

// The metadata key every call carries the token in; the server's check reads the same.
inline constexpr char kTokenMetadataKey[] = "x-ddprun-token";

struct ClientSecurity {
  std::string token;         // empty: the server has none
  std::string tls_ca_pem;    // set: speak TLS and trust servers this CA signed
  std::string tls_cert_pem;  // with tls_key_pem: the client certificate for mutual TLS
  std::string tls_key_pem;
};

}  // namespace ddprun
