// What `ddprun` and `ddprun status` share to reach a rendezvous server: the endpoint syntax and
// the security flags (--token-file, --tls-cert, --tls-key, --tls-ca).
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/flag_spec.h"
#include "ddprun/base/status.h"

namespace ddprun {

constexpr int kDefaultRendezvousPort = 29400;  // torchrun's
constexpr int kDefaultEtcdPort = 2379;         // etcd's client port

struct Endpoint {
  std::string host;
  int port = 0;
};

// "HOST" or "HOST:PORT" (IPv4 address or host name). INVALID_ARGUMENT saying what is wrong.
Result<Endpoint> ParseEndpoint(const std::string& text, int default_port);

// The security flags, writing the file names given (DefineFlags defines them).
std::vector<FlagSpec> SecurityFlags(std::string& token_file, std::string& tls_cert,
                                    std::string& tls_key, std::string& tls_ca);

// Reads the files the flags named. INVALID_ARGUMENT naming the flag and the problem.
Result<ClientSecurity> LoadClientSecurity(const std::string& token_file,
                                          const std::string& tls_cert, const std::string& tls_key,
                                          const std::string& tls_ca);

}  // namespace ddprun
