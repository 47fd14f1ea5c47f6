// ddprund's flags and ParseDaemonCommandLine; see daemon_config.h.
#include "daemon_config.h"

#include <algorithm>
#include <filesystem>

#include "daemon_config_file.h"
#include "ddprun/base/flag_parser.h"
#include "ddprun/base/ipv4.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/version.h"
#include "ddprun/etcd/etcd_endpoints.h"

namespace ddprun {
namespace {

// The value of --config in `args` ("--config FILE" or "--config=FILE"), or empty.
std::string ConfigFileArgument(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--config" && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--config=", 0) == 0) return args[i].substr(9);
  }
  return "";
}

// --store and the etcd client's flags into values.config.store.
Status ValidateStoreFlags(DaemonFlagValues& values) {
  DaemonStoreConfig& store = values.config.store;
  if (values.store != "memory" && values.store != "etcd") {
    return InvalidArgumentError("--store must be memory or etcd, not '" + values.store + "'");
  }
  store.etcd = values.store == "etcd";
  const bool etcd_flags = !values.etcd_endpoints.empty() || !store.etcd_user.empty() ||
                          !values.etcd_password_file.empty() || !values.etcd_tls.ca_file.empty() ||
                          !values.etcd_tls.cert_file.empty() || !values.etcd_tls.key_file.empty();
  if (!store.etcd) {
    if (etcd_flags) return InvalidArgumentError("the --etcd-* settings need --store=etcd");
    return Status::Ok();
  }
  if (values.etcd_endpoints.empty()) {
    return InvalidArgumentError("--store=etcd needs --etcd-endpoints (h1:2379,h2:2379,h3:2379)");
  }
  auto endpoints = etcd::ParseEtcdEndpoints(values.etcd_endpoints);
  if (!endpoints.ok())
    return InvalidArgumentError("--etcd-endpoints: " + endpoints.status().message());
  store.etcd_endpoints = std::move(endpoints).value();
  if (store.etcd_prefix.empty() || store.etcd_prefix.back() != '/') {
    return InvalidArgumentError("--etcd-prefix must end with '/', as in /ddprun/, not '" +
                                store.etcd_prefix + "'");
  }
  if (store.etcd_user.empty() != values.etcd_password_file.empty()) {
    return InvalidArgumentError("--etcd-user and --etcd-password-file go together");
  }
  if (!values.etcd_password_file.empty()) {
    auto password =
        ReadSecretFile("--etcd-password-file", values.etcd_password_file, "etcd password");
    if (!password.ok()) return password.status();
    store.etcd_password = std::move(password).value();
  }
  RETURN_IF_ERROR(ReadTlsFiles(values.etcd_tls, "--etcd-tls-"));
  store.etcd_ca_pem = std::move(values.etcd_tls.ca_pem);
  store.etcd_cert_pem = std::move(values.etcd_tls.cert_pem);
  store.etcd_key_pem = std::move(values.etcd_tls.key_pem);
  return Status::Ok();
}

}  // namespace

std::vector<FlagSpec> DaemonFlags(DaemonFlagValues& values) {
  DaemonConfig& config = values.config;
  values.config_help = "Read settings from this file (key = value:";
  for (const std::string& key : DaemonConfigFileKeys()) values.config_help += " " + key;
  values.config_help += "); flags win over it";
  return {
      {.name = "--version",
       .pet = false,
       .help = "Print the version and exit",
       .target = &values.version},
      {.name = "--config", .pet = false, .help = values.config_help, .target = &values.config_file},
      {.name = "--bind",
       .pet = false,
       .help = "Address to listen on (0.0.0.0: every interface; needs --token-file)",
       .target = &config.bind,
       .show_default = true},
      {.name = "--port",
       .pet = false,
       .help = "Port to listen on; 0 picks a free one and reports it",
       .target = &config.port,
       .show_default = true},
      {.name = "--port-file",
       .pet = false,
       .help = "Write the bound port to this file",
       .target = &config.port_file},
      {.name = "--metrics-port",
       .pet = false,
       .help = "Serve /metrics, /healthz and /readyz over HTTP on this port (0: a free one, "
               "reported); off unless set",
       .target = &config.metrics_port},
      {.name = "--metrics-bind",
       .pet = false,
       .help = "Address the metrics port listens on (not loopback: needs --token-file)",
       .target = &config.metrics_bind,
       .show_default = true},
      {.name = "--token-file",
       .pet = false,
       .help = "File holding the token every call must carry (see DDPRUN_TOKEN)",
       .target = &values.token_file},
      {.name = "--tls-cert",
       .pet = false,
       .help = "Serve TLS with this PEM certificate (needs --tls-key)",
       .target = &values.tls.cert_file},
      {.name = "--tls-key",
       .pet = false,
       .help = "The PEM private key of --tls-cert",
       .target = &values.tls.key_file},
      {.name = "--tls-ca",
       .pet = false,
       .help = "Require client certificates signed by this PEM CA (mutual TLS)",
       .target = &values.tls.ca_file},
      {.name = "--agent-program",
       .pet = false,
       .help = "The ddprun that runs each submitted job's node agent (default: the one beside "
               "ddprund)",
       .target = &config.agent_program},
      {.name = "--allow-root-jobs",
       .pet = false,
       .help = "Run submitted jobs although this daemon runs as root (they run as root)",
       .target = &config.allow_root_jobs},
      {.name = "--store",
       .pet = false,
       .help = "Where the jobs' store keys live: memory (this daemon's) or etcd (shared by every "
               "ddprund pointed at the same etcd cluster)",
       .target = &values.store,
       .show_default = true},
      {.name = "--etcd-endpoints",
       .pet = false,
       .help = "The etcd cluster's members, h1:2379,h2:2379,h3:2379 (with --store=etcd)",
       .target = &values.etcd_endpoints},
      {.name = "--etcd-prefix",
       .pet = false,
       .help = "The etcd keys under which this group of daemons keeps its jobs (ends with /)",
       .target = &config.store.etcd_prefix,
       .show_default = true},
      {.name = "--etcd-user",
       .pet = false,
       .help = "The etcd user to authenticate as (needs --etcd-password-file)",
       .target = &config.store.etcd_user},
      {.name = "--etcd-password-file",
       .pet = false,
       .help = "File holding --etcd-user's password",
       .target = &values.etcd_password_file},
      {.name = "--etcd-tls-ca",
       .pet = false,
       .help = "Speak TLS to etcd, trusting the members' certificates this PEM CA signed",
       .target = &values.etcd_tls.ca_file},
      {.name = "--etcd-tls-cert",
       .pet = false,
       .help = "A PEM client certificate for etcd (needs --etcd-tls-key)",
       .target = &values.etcd_tls.cert_file},
      {.name = "--etcd-tls-key",
       .pet = false,
       .help = "The PEM private key of --etcd-tls-cert",
       .target = &values.etcd_tls.key_file},
  };
}

std::string DaemonConfigFileKeyOf(std::string_view flag_name) {
  std::string key(flag_name.substr(flag_name.find_first_not_of('-')));
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

ParsedDaemonCommandLine ParseDaemonCommandLine(const std::vector<std::string>& args) {
  DaemonFlagValues values;
  DaemonConfig& config = values.config;
  std::string& token_file = values.token_file;
  TlsFlags& tls = values.tls;
  // The configuration file first, so that flags given on the command line override it.
  const std::string config_file = ConfigFileArgument(args);
  if (!config_file.empty()) {
    auto file = ReadDaemonConfigFile(config_file);
    if (!file.ok()) return DaemonUsageError{file.status().message()};
    config.bind = file->bind.value_or(config.bind);
    config.port = file->port.value_or(config.port);
    config.port_file = file->port_file.value_or(config.port_file);
    config.metrics_port = file->metrics_port.value_or(config.metrics_port);
    config.metrics_bind = file->metrics_bind.value_or(config.metrics_bind);
    token_file = file->token_file.value_or(token_file);
    tls.cert_file = file->tls_cert.value_or(tls.cert_file);
    tls.key_file = file->tls_key.value_or(tls.key_file);
    tls.ca_file = file->tls_ca.value_or(tls.ca_file);
    config.agent_program = file->agent_program.value_or(config.agent_program);
    config.allow_root_jobs = file->allow_root_jobs.value_or(config.allow_root_jobs);
    values.store = file->store.value_or(values.store);
    values.etcd_endpoints = file->etcd_endpoints.value_or(values.etcd_endpoints);
    config.store.etcd_prefix = file->etcd_prefix.value_or(config.store.etcd_prefix);
    config.store.etcd_user = file->etcd_user.value_or(config.store.etcd_user);
    values.etcd_password_file = file->etcd_password_file.value_or(values.etcd_password_file);
    values.etcd_tls.ca_file = file->etcd_tls_ca.value_or(values.etcd_tls.ca_file);
    values.etcd_tls.cert_file = file->etcd_tls_cert.value_or(values.etcd_tls.cert_file);
    values.etcd_tls.key_file = file->etcd_tls_key.value_or(values.etcd_tls.key_file);
  }
  const FlagParser parser(CommandSpec{
      .synopsis = "ddprund [OPTIONS]",
      .description = "The ddprun rendezvous daemon: serves the rendezvous and key-value store of "
                     "many jobs.\nRuns until SIGTERM or SIGINT.",
      .flags = DaemonFlags(values)});
  auto parsed = parser.Parse(args);
  if (!parsed.ok()) return DaemonUsageError{parsed.status().message() + " (see ddprund --help)"};
  if (parsed->help) return DaemonHelp{parser.Help()};
  if (values.version) return DaemonHelp{std::string("ddprund ") + DDPRUN_VERSION + "\n"};
  if (config.port < 0 || config.port > 65535) {
    return DaemonUsageError{"--port must be from 0 to 65535, not " + std::to_string(config.port)};
  }
  if (config.metrics_port < -1 || config.metrics_port > 65535) {
    return DaemonUsageError{"--metrics-port must be from 0 to 65535, not " +
                            std::to_string(config.metrics_port)};
  }
  if (config.metrics_bind != "localhost" && !IsIpv4Address(config.metrics_bind)) {
    return DaemonUsageError{
        "--metrics-bind must be an IPv4 address such as 0.0.0.0 or 127.0.0.1, not '" +
        config.metrics_bind + "'"};
  }
  if (config.bind != "localhost" && !IsIpv4Address(config.bind)) {
    return DaemonUsageError{"--bind must be an IPv4 address such as 0.0.0.0 or 127.0.0.1, not '" +
                            config.bind + "'"};
  }
  if (!token_file.empty()) {
    auto token = ReadTokenFile(token_file);
    if (!token.ok()) return DaemonUsageError{token.status().message()};
    config.token = std::move(token).value();
    config.token_file = std::filesystem::absolute(token_file).string();
  } else if (!IsLoopbackAddress(config.bind)) {
    return DaemonUsageError{"--bind " + config.bind +
                            " would accept calls from other hosts without a token; pass "
                            "--token-file"};
  } else if (config.metrics_port >= 0 && !IsLoopbackAddress(config.metrics_bind)) {
    return DaemonUsageError{"--metrics-bind " + config.metrics_bind +
                            " would show the jobs to other hosts without a token; pass "
                            "--token-file"};
  }
  if (!config.agent_program.empty() && config.agent_program[0] != '/') {
    return DaemonUsageError{"--agent-program must be an absolute path, not '" +
                            config.agent_program + "'"};
  }
  if (!tls.ca_file.empty() && tls.cert_file.empty()) {
    return DaemonUsageError{"--tls-ca needs --tls-cert and --tls-key (the server's own TLS)"};
  }
  if (Status s = ReadTlsFiles(tls); !s.ok()) return DaemonUsageError{s.message()};
  config.tls_cert_pem = std::move(tls.cert_pem);
  config.tls_key_pem = std::move(tls.key_pem);
  config.tls_ca_pem = std::move(tls.ca_pem);
  if (Status s = ValidateStoreFlags(values); !s.ok()) return DaemonUsageError{s.message()};
  return config;
}

}  // namespace ddprun
