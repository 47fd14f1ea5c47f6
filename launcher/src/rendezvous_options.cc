// Endpoint and security flags; see rendezvous_options.h.
#include "rendezvous_options.h"

#include <algorithm>

#include "ddprun/base/parsing.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {

Result<Endpoint> ParseEndpoint(const std::string& text, int default_port) {
  const std::string usage = "--rdzv_endpoint must be HOST or HOST:PORT, not '" + text + "'";
  // A host name or an IPv4 address: no white space, control character, slash, bracket or comma
  // (commas separate the hosts of --hosts).
  const auto unfit = [](unsigned char c) {
    return c <= ' ' || c == 0x7f || c == '/' || c == '[' || c == ']' || c == ',';
  };
  if (text.empty() || std::any_of(text.begin(), text.end(), unfit)) {
    return InvalidArgumentError(usage);
  }
  const auto colon = text.find(':');
  if (colon == std::string::npos) return Endpoint{text, default_port};
  if (colon == 0 || text.find(':', colon + 1) != std::string::npos) {
    return InvalidArgumentError(usage + " (IPv6 addresses are not supported)");
  }
  const std::string port_text = text.substr(colon + 1);
  const auto port = ParseInteger<int>(text.substr(colon + 1), 1, 65535);
  if (!port) return InvalidArgumentError(usage + ": the port must be from 1 to 65535");
  return Endpoint{text.substr(0, colon), *port};
}

std::vector<FlagSpec> SecurityFlags(std::string& token_file, std::string& tls_cert,
                                    std::string& tls_key, std::string& tls_ca) {
  return {
      {.name = "--token-file",
       .help = "File holding the rendezvous server's token, sent with every call",
       .target = &token_file},
      {.name = "--tls-cert",
       .help =
           "PEM certificate of this node (client certificate; server certificate when this node "
           "hosts the rendezvous)",
       .target = &tls_cert},
      {.name = "--tls-key", .help = "PEM private key of --tls-cert", .target = &tls_key},
      {.name = "--tls-ca",
       .help = "PEM CA that signed the rendezvous server's certificate: speak TLS",
       .target = &tls_ca},
  };
}

Result<ClientSecurity> LoadClientSecurity(const std::string& token_file,
                                          const std::string& tls_cert, const std::string& tls_key,
                                          const std::string& tls_ca) {
  ClientSecurity security;
  if (!token_file.empty()) {
    ASSIGN_OR_RETURN(security.token, ReadTokenFile(token_file));
  }
  TlsFlags tls{tls_cert, tls_key, tls_ca, "", "", ""};
  RETURN_IF_ERROR(ReadTlsFiles(tls));
  if (!tls_cert.empty() && tls_ca.empty()) {
    return InvalidArgumentError(
        "--tls-cert needs --tls-ca (the CA that signed the server's certificate)");
  }
  security.tls_cert_pem = std::move(tls.cert_pem);
  security.tls_key_pem = std::move(tls.key_pem);
  security.tls_ca_pem = std::move(tls.ca_pem);
  return security;
}

}  // namespace ddprun
