// The files that secure a rendezvous: a token file and TLS PEM files, read and checked once at
// start-up so that a server or agent never runs without the protection it was given.
#pragma once

#include <string>
#include <string_view>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"

namespace ddprun {

// The secret in `path`, given for `flag`: its content without surrounding whitespace; one word
// on one line. INVALID_ARGUMENT saying what is wrong with the file (unreadable, empty, several
// words), naming the flag and `what` the file holds ("job token").
Result<std::string> ReadSecretFile(const std::string& flag, const std::string& path,
                                   const std::string& what);
// ReadSecretFile for --token-file.
Result<std::string> ReadTokenFile(const std::string& path);

// The PEM text in `path`, given for `flag` (named in errors). INVALID_ARGUMENT when unreadable or
// not PEM.
Result<std::string> ReadPemFile(const std::string& flag, const std::string& path);

// The three TLS flags every ddprun command takes, as file names, and their PEM text once read.
struct TlsFlags {
  std::string cert_file, key_file, ca_file;
  std::string cert_pem, key_pem, ca_pem;
};

// Reads the files `flags` names (--tls-cert and --tls-key go together). INVALID_ARGUMENT naming
// the flag and the problem; the flags are named `flag_prefix` + "cert", "key", "ca" (ddprund's
// etcd client has "--etcd-tls-").
Status ReadTlsFiles(TlsFlags& flags, std::string_view flag_prefix = "--tls-");

// A worker's side: the PEM text of the TLS files its environment names (DDPRUN_TLS_CA,
// DDPRUN_TLS_CERT, DDPRUN_TLS_KEY; paths, empty when not given) into `security`.
// INVALID_ARGUMENT naming the variable and the problem.
Status ReadWorkerTlsFiles(const std::string& ca_file, const std::string& cert_file,
                          const std::string& key_file, ClientSecurity& security);

}  // namespace ddprun
