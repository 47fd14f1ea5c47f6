// Token and PEM files; see security_files.h.
#include "ddprun/base/security_files.h"

#include <tuple>

#include "ddprun/base/files.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_environment_contract.h"

namespace ddprun {
namespace {

constexpr size_t kMaxFileBytes = 1 << 20;

}  // namespace

Result<std::string> ReadSecretFile(const std::string& flag, const std::string& path,
                                   const std::string& what) {
  ASSIGN_OR_RETURN(const std::string text, ReadUserFile(flag, path, kMaxFileBytes));
  const auto first = text.find_first_not_of(" \t\r\n");
  const auto last = text.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return InvalidArgumentError(flag + " " + path + " is empty; put the " + what + " in it");
  }
  std::string secret = text.substr(first, last - first + 1);
  if (secret.find_first_of(" \t\r\n") != std::string::npos) {
    return InvalidArgumentError(flag + " " + path + " must hold one " + what + " on one line");
  }
  return secret;
}

Result<std::string> ReadTokenFile(const std::string& path) {
  return ReadSecretFile("--token-file", path, "job token");
}

Result<std::string> ReadPemFile(const std::string& flag, const std::string& path) {
  ASSIGN_OR_RETURN(std::string content, ReadUserFile(flag, path, kMaxFileBytes));
  if (content.find("-----BEGIN ") == std::string::npos) {
    return InvalidArgumentError(flag + " " + path + " is not a PEM file (no -----BEGIN line)");
  }
  return content;
}

Status ReadTlsFiles(TlsFlags& flags, std::string_view flag_prefix) {
  const std::string prefix(flag_prefix);
  if (flags.cert_file.empty() != flags.key_file.empty()) {
    return InvalidArgumentError(prefix + "cert and " + prefix +
                                "key go together; give both or neither");
  }
  const std::pair<std::string, std::pair<const std::string*, std::string*>> files[] = {
      {prefix + "cert", {&flags.cert_file, &flags.cert_pem}},
      {prefix + "key", {&flags.key_file, &flags.key_pem}},
      {prefix + "ca", {&flags.ca_file, &flags.ca_pem}}};
  for (const auto& [flag, file] : files) {
    if (file.first->empty()) continue;
    ASSIGN_OR_RETURN(*file.second, ReadPemFile(flag, *file.first));
  }
  return Status::Ok();
}

Status ReadWorkerTlsFiles(const std::string& ca_file, const std::string& cert_file,
                          const std::string& key_file, ClientSecurity& security) {
  const std::tuple<const worker_env::Variable&, const std::string&, std::string&> files[] = {
      {worker_env::kTlsCa, ca_file, security.tls_ca_pem},
      {worker_env::kTlsCert, cert_file, security.tls_cert_pem},
      {worker_env::kTlsKey, key_file, security.tls_key_pem}};
  for (const auto& [variable, path, pem] : files) {
    if (path.empty()) continue;
    ASSIGN_OR_RETURN(pem, ReadPemFile(variable.name, path));
  }
  return Status::Ok();
}

}  // namespace ddprun
