// ddprund's configuration file (`--config FILE`, /etc/ddprun/ddprund.conf under systemd): one
// `key = value` per line, `#` starts a comment, blank lines are ignored. The keys are the
// daemon's flags with underscores: bind, port, port_file, metrics_port, metrics_bind, token_file,
// tls_cert, tls_key, tls_ca, agent_program, allow_root_jobs (true or false), store (memory or
// etcd), etcd_endpoints, etcd_prefix, etcd_user, etcd_password_file, etcd_tls_ca, etcd_tls_cert,
// etcd_tls_key. Flags on the command line win over the file.
//
// Reading checks everything a key's value can be checked for (a port number, an IPv4 address,
// a readable token or PEM file), so that a daemon with a bad file never starts: errors name the
// file, the line and the key ("/etc/ddprun/ddprund.conf:3: port: ...").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/status.h"

namespace ddprun {

struct DaemonFileSettings {
  std::optional<std::string> bind;
  std::optional<int> port;
  std::optional<std::string> port_file;
  std::optional<int> metrics_port;
  std::optional<std::string> metrics_bind;
  std::optional<std::string> token_file;
  std::optional<std::string> tls_cert;
  std::optional<std::string> tls_key;
  std::optional<std::string> tls_ca;
  std::optional<std::string> agent_program;
  std::optional<bool> allow_root_jobs;
  std::optional<std::string> store;
  std::optional<std::string> etcd_endpoints;
  std::optional<std::string> etcd_prefix;
  std::optional<std::string> etcd_user;
  std::optional<std::string> etcd_password_file;
  std::optional<std::string> etcd_tls_ca;
  std::optional<std::string> etcd_tls_cert;
  std::optional<std::string> etcd_tls_key;
};

// INVALID_ARGUMENT for an unreadable file, a line that is not `key = value`, an unknown or
// repeated key, or a bad value; the message is one line.
Result<DaemonFileSettings> ReadDaemonConfigFile(const std::string& path);

// The keys the file knows, sorted.
std::vector<std::string> DaemonConfigFileKeys();

}  // namespace ddprun
