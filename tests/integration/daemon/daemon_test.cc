// ddprund, the rendezvous daemon, as a real process.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "ddprun/base/version.h"
#include "ddprun/rendezvous/store_client.h"
#include "support/child_process.h"
#include "support/test_paths.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

const std::string kDdprund = paths::kDdprund;

// Starts the daemon and waits for its "listening" line; returns the port (0 on failure).
int StartDaemon(ChildProcess& daemon) {
  auto line = daemon.WaitForStdoutLine(
      [](const std::string& l) { return l.rfind("ddprund listening on ", 0) == 0; });
  if (!line) return 0;
  return std::stoi(line->substr(line->rfind(':') + 1));
}

std::unique_ptr<StoreClient> Client(int port, const std::string& token) {
  StoreClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  options.security.token = token;
  options.job_id = "job7";
  options.rpc_timeout = std::chrono::seconds(10);
  return StoreClient::Connect(options);
}

}  // namespace

TEST_CASE("ddprund --port 0 reports its port and serves the store to callers with the token") {
  ScratchDir dir;
  std::ofstream(dir / "token") << "s3cret\n";
  ChildProcess daemon(
      {kDdprund, "--port", "0", "--port-file", dir / "port", "--token-file", dir / "token"});
  const int port = StartDaemon(daemon);
  REQUIRE(port > 0);
  CHECK(ReadFile(dir / "port") == std::to_string(port) + "\n");

  REQUIRE(Client(port, "s3cret")->Set("k", "v").ok());
  CHECK(Client(port, "s3cret")->Get("k").value() == "v");
  CHECK(Client(port, "guess")->Get("k").status().code() == StatusCode::kUnauthenticated);
  CHECK(Client(port, "")->Set("k", "x").code() == StatusCode::kUnauthenticated);

  daemon.Signal(SIGTERM);
  auto exit = daemon.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  CHECK(daemon.stderr_text().find("refused a call") != std::string::npos);  // the server logs it
}

TEST_CASE("ddprund refuses a port that is taken with a clear error") {
  ChildProcess first({kDdprund, "--port", "0"});
  const int port = StartDaemon(first);
  REQUIRE(port > 0);
  auto second = Run({kDdprund, "--port", std::to_string(port)});
  CHECK(second.code() == 1);
  CHECK(second.err.find("could not bind 127.0.0.1:" + std::to_string(port)) != std::string::npos);
}

TEST_CASE("ddprund refuses bad input with one line and exit status 2") {
  ScratchDir dir;
  std::ofstream(dir / "empty") << "  \n";
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--token-file", dir / "missing"}, "cannot read --token-file " + (dir / "missing")},
      {{"--token-file", dir / "empty"}, "is empty"},
      {{"--bind", "0.0.0.0"}, "without a token; pass --token-file"},
      {{"--bind", "somewhere"}, "--bind must be an IPv4 address"},
      {{"--port", "70000"}, "--port must be from 0 to 65535"},
      {{"--colour"}, "--colour"},
  };
  for (const auto& [args, expected] : cases) {
    std::vector<std::string> argv = {kDdprund};
    argv.insert(argv.end(), args.begin(), args.end());
    auto result = Run(argv);
    INFO(result.err);
    CHECK(result.code() == 2);
    CHECK(Lines(result.err).size() == 1);
    CHECK(result.err.rfind("ddprund: error: ", 0) == 0);
    CHECK(result.err.find(expected) != std::string::npos);
  }
}

TEST_CASE("ddprund reads its settings from --config, and flags win over the file") {
  ScratchDir dir;
  std::ofstream(dir / "token") << "from-file\n";
  std::ofstream(dir / "ddprund.conf") << "# the daemon's settings\n"
                                      << "bind = 127.0.0.1\n"
                                      << "\n"
                                      << "port = 1   # overridden on the command line\n"
                                      << "port_file = " << (dir / "port") << "\n"
                                      << "token_file = " << (dir / "token") << "\n";
  ChildProcess daemon({kDdprund, "--config", dir / "ddprund.conf", "--port=0"});
  const int port = StartDaemon(daemon);
  INFO(daemon.stderr_text());
  REQUIRE(port > 0);
  CHECK(ReadFile(dir / "port") == std::to_string(port) + "\n");
  CHECK(Client(port, "from-file")->Set("k", "v").ok());
  CHECK(Client(port, "")->Set("k", "v").code() == StatusCode::kUnauthenticated);
}

TEST_CASE("ddprund refuses a bad configuration file with one line naming file, line and key") {
  ScratchDir dir;
  const std::string conf = dir / "ddprund.conf";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"port = 29400\nprot = 1\n",
       conf +
           ":2: unknown key 'prot' (known: agent_program, allow_root_jobs, bind, etcd_endpoints"},
      {"allow_root_jobs = yes\n", conf + ":1: allow_root_jobs: 'yes' is neither true nor false"},
      {"agent_program = ddprun\n", conf + ":1: agent_program: 'ddprun' is not an absolute path"},
      {"port = many\n", conf + ":1: port: 'many' is not a port number"},
      {"bind = 0.0.0.0\nport = 70000\n", conf + ":2: port: '70000' is not a port number"},
      {"bind = here\n", conf + ":1: bind: 'here' is not an IPv4 address"},
      {"\n\ntoken_file = " + (dir / "missing") + "\n",
       conf + ":3: token_file: cannot read --token-file " + (dir / "missing")},
      {"tls_cert = " + (dir / "missing.pem") + "\n", conf + ":1: tls_cert: "},
      {"port 29400\n", conf + ":1: expected 'key = value', not 'port 29400'"},
      {"port = 1\nport = 2\n", conf + ":2: port: given twice"},
      {"bind = 0.0.0.0\n", "without a token; pass --token-file"},
  };
  for (const auto& [text, expected] : cases) {
    std::ofstream(conf) << text;
    auto result = Run({kDdprund, "--config=" + conf});
    INFO(text << "\n" << result.err);
    CHECK(result.code() == 2);
    CHECK(Lines(result.err).size() == 1);
    CHECK(result.err.find(expected) != std::string::npos);
  }
  auto missing = Run({kDdprund, "--config", dir / "nowhere.conf"});
  CHECK(missing.code() == 2);
  CHECK(missing.err.find("cannot read the configuration file " + (dir / "nowhere.conf")) !=
        std::string::npos);
}

TEST_CASE("ddprund --version prints the version ddprun prints") {
  auto daemon = Run({kDdprund, "--version"});
  CHECK(daemon.code() == 0);
  CHECK(daemon.out == std::string("ddprund ") + DDPRUN_VERSION + "\n");
}
