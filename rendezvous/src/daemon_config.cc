// ParseDaemonCommandLine; see daemon_config.h.
#include "ddprun/rendezvous/daemon_config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace ddprun {
namespace {

bool IsLoopback(const std::string& address) {
  in_addr parsed{};
  if (address == "localhost") return true;
  if (::inet_pton(AF_INET, address.c_str(), &parsed) != 1) return false;
  return (ntohl(parsed.s_addr) >> 24) == 127;
}

// The token: the file's content without surrounding whitespace. An error message, or "".
std::string ReadToken(const std::string& path, std::string& token) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read --token-file " + path + ": " + std::strerror(errno);
  std::stringstream content;
  content << in.rdbuf();
  token = content.str();
  const auto first = token.find_first_not_of(" \t\r\n");
  const auto last = token.find_last_not_of(" \t\r\n");
  token = first == std::string::npos ? "" : token.substr(first, last - first + 1);
  if (token.empty()) return "--token-file " + path + " is empty; put the job token in it";
  if (token.find_first_of(" \t\r\n") != std::string::npos) {
    return "--token-file " + path + " must hold one token on one line";
  }
  return "";
}

}  // namespace

ParsedDaemonCommandLine ParseDaemonCommandLine(const std::vector<std::string>& args) {
  CLI::App app(
      "ddprund [OPTIONS]\n\nThe ddprun rendezvous daemon: serves the rendezvous and "
      "key-value store of many jobs.\nRuns until SIGTERM or SIGINT.",
      "ddprund");
  DaemonConfig config;
  std::string token_file;
  app.add_option("--bind", config.bind,
                 "Address to listen on (0.0.0.0: every interface; needs --token-file)")
      ->capture_default_str();
  app.add_option("--port", config.port, "Port to listen on; 0 picks a free one and reports it")
      ->capture_default_str();
  app.add_option("--port-file", config.port_file, "Write the bound port to this file");
  app.add_option("--token-file", token_file,
                 "File holding the token every call must carry (see DDPRUN_TOKEN)");
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return DaemonHelp{app.help()};
  } catch (const CLI::ParseError& e) {
    return DaemonUsageError{std::string(e.what()) + " (see ddprund --help)"};
  }
  if (config.port < 0 || config.port > 65535) {
    return DaemonUsageError{"--port must be from 0 to 65535, not " + std::to_string(config.port)};
  }
  in_addr parsed{};
  if (config.bind != "localhost" && ::inet_pton(AF_INET, config.bind.c_str(), &parsed) != 1) {
    return DaemonUsageError{"--bind must be an IPv4 address such as 0.0.0.0 or 127.0.0.1, not '" +
                            config.bind + "'"};
  }
  if (!token_file.empty()) {
    if (std::string error = ReadToken(token_file, config.token); !error.empty()) {
      return DaemonUsageError{error};
    }
  } else if (!IsLoopback(config.bind)) {
    return DaemonUsageError{"--bind " + config.bind +
                            " would accept calls from other hosts without a token; pass "
                            "--token-file"};
  }
  return config;
}

std::string WriteFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot create " + temporary + ": " + std::strerror(errno);
  const bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!written || !synced || std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string error = std::strerror(errno);
    ::unlink(temporary.c_str());
    return "cannot write " + path + ": " + error;
  }
  return "";
}

}  // namespace ddprun
