// ddprund's configuration file; see daemon_config_file.h.
#include "daemon_config_file.h"

#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "ddprun/base/files.h"
#include "ddprun/base/ipv4.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/security_files.h"
#include "ddprun/etcd/etcd_endpoints.h"

namespace ddprun {
namespace {

// A configuration file is a few lines; a larger one is not one (or is /dev/zero).
constexpr size_t kMaxConfigFileBytes = 1 << 20;

// What each key accepts: checks the value and stores it; an error message otherwise.
using KeyParser = std::function<std::string(const std::string& value, DaemonFileSettings&)>;

KeyParser Port(std::optional<int> DaemonFileSettings::*field) {
  return [field](const std::string& value, DaemonFileSettings& settings) -> std::string {
    const auto port = ParseInteger<int>(value, 0, 65535);
    if (!port) return "'" + value + "' is not a port number from 0 to 65535";
    settings.*field = *port;
    return "";
  };
}

std::string ParseAllowRootJobs(const std::string& value, DaemonFileSettings& settings) {
  if (value != "true" && value != "false") return "'" + value + "' is neither true nor false";
  settings.allow_root_jobs = value == "true";
  return "";
}

std::string ParseAgentProgram(const std::string& value, DaemonFileSettings& settings) {
  if (value[0] != '/') return "'" + value + "' is not an absolute path";
  settings.agent_program = value;
  return "";
}

KeyParser Address(std::optional<std::string> DaemonFileSettings::*field) {
  return [field](const std::string& value, DaemonFileSettings& settings) -> std::string {
    if (value != "localhost" && !IsIpv4Address(value)) {
      return "'" + value + "' is not an IPv4 address such as 0.0.0.0 or 127.0.0.1";
    }
    settings.*field = value;
    return "";
  };
}

// A file the daemon must read at start: read now, so that the error points at this line.
KeyParser ReadableFile(std::optional<std::string> DaemonFileSettings::*field,
                       const std::function<Status(const std::string&)>& check) {
  return [field, check](const std::string& value, DaemonFileSettings& settings) -> std::string {
    if (Status s = check(value); !s.ok()) return s.message();
    settings.*field = value;
    return "";
  };
}

Status CheckPem(const std::string& path) { return ReadPemFile("the file", path).status(); }

// A value taken as it is (checked with the command line's, after both are read).
KeyParser Verbatim(std::optional<std::string> DaemonFileSettings::*field) {
  return [field](const std::string& value, DaemonFileSettings& settings) {
    settings.*field = value;
    return std::string();
  };
}

std::string ParseStore(const std::string& value, DaemonFileSettings& settings) {
  if (value != "memory" && value != "etcd") return "'" + value + "' is neither memory nor etcd";
  settings.store = value;
  return "";
}

std::string ParseEtcdEndpointList(const std::string& value, DaemonFileSettings& settings) {
  if (auto endpoints = etcd::ParseEtcdEndpoints(value); !endpoints.ok()) {
    return endpoints.status().message();
  }
  settings.etcd_endpoints = value;
  return "";
}

const std::map<std::string, KeyParser>& Keys() {
  static const std::map<std::string, KeyParser> keys = {
      {"agent_program", ParseAgentProgram},
      {"allow_root_jobs", ParseAllowRootJobs},
      {"bind", Address(&DaemonFileSettings::bind)},
      {"metrics_bind", Address(&DaemonFileSettings::metrics_bind)},
      {"metrics_port", Port(&DaemonFileSettings::metrics_port)},
      {"port", Port(&DaemonFileSettings::port)},
      {"port_file", Verbatim(&DaemonFileSettings::port_file)},
      {"token_file",
       ReadableFile(&DaemonFileSettings::token_file,
                    [](const std::string& path) { return ReadTokenFile(path).status(); })},
      {"tls_cert", ReadableFile(&DaemonFileSettings::tls_cert, CheckPem)},
      {"tls_key", ReadableFile(&DaemonFileSettings::tls_key, CheckPem)},
      {"tls_ca", ReadableFile(&DaemonFileSettings::tls_ca, CheckPem)},
      {"store", ParseStore},
      {"etcd_endpoints", ParseEtcdEndpointList},
      {"etcd_prefix", Verbatim(&DaemonFileSettings::etcd_prefix)},
      {"etcd_user", Verbatim(&DaemonFileSettings::etcd_user)},
      {"etcd_password_file",
       ReadableFile(&DaemonFileSettings::etcd_password_file,
                    [](const std::string& path) {
                      return ReadSecretFile("the file", path, "etcd password").status();
                    })},
      {"etcd_tls_ca", ReadableFile(&DaemonFileSettings::etcd_tls_ca, CheckPem)},
      {"etcd_tls_cert", ReadableFile(&DaemonFileSettings::etcd_tls_cert, CheckPem)},
      {"etcd_tls_key", ReadableFile(&DaemonFileSettings::etcd_tls_key, CheckPem)},
  };
  return keys;
}

std::string KnownKeys() {
  std::string list;
  for (const auto& [key, parser] : Keys()) list += (list.empty() ? "" : ", ") + key;
  return list;
}

}  // namespace

std::vector<std::string> DaemonConfigFileKeys() {
  std::vector<std::string> keys;
  for (const auto& [key, parser] : Keys()) keys.push_back(key);
  return keys;
}

Result<DaemonFileSettings> ReadDaemonConfigFile(const std::string& path) {
  auto text = ReadUserFile("the configuration file", path, kMaxConfigFileBytes);
  if (!text.ok()) return text.status();
  std::istringstream in(*text);
  DaemonFileSettings settings;
  std::set<std::string> seen;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = path + ":" + std::to_string(number) + ": ";
    const std::string content = Trim(line.substr(0, line.find('#')));
    if (content.empty()) continue;
    const size_t equals = content.find('=');
    if (equals == std::string::npos) {
      return InvalidArgumentError(where + "expected 'key = value', not '" + content + "'");
    }
    const std::string key = Trim(content.substr(0, equals));
    const std::string value = Trim(content.substr(equals + 1));
    auto parser = Keys().find(key);
    if (parser == Keys().end()) {
      return InvalidArgumentError(where + "unknown key '" + key + "' (known: " + KnownKeys() + ")");
    }
    if (!seen.insert(key).second) {
      return InvalidArgumentError(where + key + ": given twice; keep one line");
    }
    if (value.empty()) return InvalidArgumentError(where + key + ": no value");
    if (std::string error = parser->second(value, settings); !error.empty()) {
      return InvalidArgumentError(where + key + ": " + error);
    }
  }
  return settings;
}

}  // namespace ddprun
