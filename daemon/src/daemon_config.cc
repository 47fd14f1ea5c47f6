// ddprund's flags and ParseDaemonCommandLine; see daemon_config.h.
#include "daemon_config.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <filesystem>

#include "daemon_config_file.h"
#include "ddprun/base/ipv4.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/version.h"

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
  };
}

std::string DaemonConfigFileKeyOf(std::string_view flag_name) {
  std::string key(flag_name.substr(flag_name.find_first_not_of('-')));
  std::replace(key.begin(), key.end(), '-', '_');
  return key;
}

ParsedDaemonCommandLine ParseDaemonCommandLine(const std::vector<std::string>& args) {
  CLI::App app(
      "ddprund [OPTIONS]\n\nThe ddprun rendezvous daemon: serves the rendezvous and "
      "key-value store of many jobs.\nRuns until SIGTERM or SIGINT.",
      "ddprund");
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
    token_file = file->token_file.value_or(token_file);
    tls.cert_file = file->tls_cert.value_or(tls.cert_file);
    tls.key_file = file->tls_key.value_or(tls.key_file);
    tls.ca_file = file->tls_ca.value_or(tls.ca_file);
    config.agent_program = file->agent_program.value_or(config.agent_program);
    config.allow_root_jobs = file->allow_root_jobs.value_or(config.allow_root_jobs);
  }
  DefineFlags(app, DaemonFlags(values));
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return DaemonHelp{app.help()};
  } catch (const CLI::ParseError& e) {
    return DaemonUsageError{std::string(e.what()) + " (see ddprund --help)"};
  }
  if (values.version) return DaemonHelp{std::string("ddprund ") + DDPRUN_VERSION + "\n"};
  if (config.port < 0 || config.port > 65535) {
    return DaemonUsageError{"--port must be from 0 to 65535, not " + std::to_string(config.port)};
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
  return config;
}

}  // namespace ddprun
