// DaemonConfig: what `ddprund` (the rendezvous daemon) was asked to do, parsed and validated from
// its command line and its configuration file (--config; see daemon_config_file.h). Reading the
// token file is part of validation: a daemon that would start without the token it was given
// never starts.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "ddprun/base/flag_spec.h"
#include "ddprun/base/security_files.h"

namespace ddprun {

// Where the jobs' store keys live (docs/control_plane.md): this daemon's memory, or an etcd
// cluster that every daemon pointed at it shares.
struct DaemonStoreConfig {
  bool etcd = false;  // --store=etcd
  std::vector<std::string> etcd_endpoints;
  std::string etcd_prefix = "/ddprun/";
  std::string etcd_user;      // etcd's own authentication; empty: none
  std::string etcd_password;  // from --etcd-password-file
  std::string etcd_ca_pem;    // --etcd-tls-ca, --etcd-tls-cert and --etcd-tls-key
  std::string etcd_cert_pem;
  std::string etcd_key_pem;
};

struct DaemonConfig {
  std::string bind = "127.0.0.1";  // address to listen on; 0.0.0.0 for every interface
  int port = 29400;                // 0: a free port, reported on stdout and in port_file
  std::string port_file;           // written (atomically) with the bound port, when set
  std::string token;               // from --token-file; required on every call when set
  std::string token_file;          // absolute; the job agents read it for their rendezvous
  std::string tls_cert_pem;        // --tls-cert and --tls-key: serve TLS
  std::string tls_key_pem;
  std::string tls_ca_pem;  // --tls-ca: require client certificates it signed
  // The operators' HTTP endpoint (/metrics, /healthz, /readyz; docs/metrics.md): off at -1, else
  // the port (0: a free one, reported on stdout), on metrics_bind. It asks for the token too.
  int metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";
  // The job service: the `ddprun` that runs each job's node agent (default: the one beside
  // ddprund), and whether a daemon running as root may run jobs (as root).
  std::string agent_program;
  bool allow_root_jobs = false;
  DaemonStoreConfig store;
};

struct DaemonHelp {
  std::string text;  // --help's, or --version's ("ddprund 0.1.0")
};
struct DaemonUsageError {
  std::string message;  // one line; ddprund exits 2
};

// What ddprund's flags fill, before validation: the configuration's fields, and the files and
// switches validation turns into it.
struct DaemonFlagValues {
  DaemonConfig config;
  std::string config_file;
  std::string token_file;
  TlsFlags tls;
  std::string store = "memory";
  std::string etcd_endpoints;
  std::string etcd_password_file;
  TlsFlags etcd_tls;
  bool version = false;
  std::string config_help;  // --config's help, which lists the file's keys
};

// ddprund's flags as rows (flag_spec.h), each filling its field of `values`. None has a PET_
// variable; every one but --config and --version is also a key of the configuration file
// (DaemonConfigFileKeyOf).
std::vector<FlagSpec> DaemonFlags(DaemonFlagValues& values);

// The file's key for a flag: "--port-file" -> "port_file".
std::string DaemonConfigFileKeyOf(std::string_view flag_name);

using ParsedDaemonCommandLine = std::variant<DaemonConfig, DaemonHelp, DaemonUsageError>;

// `args` without the program name.
ParsedDaemonCommandLine ParseDaemonCommandLine(const std::vector<std::string>& args);

}  // namespace ddprun
