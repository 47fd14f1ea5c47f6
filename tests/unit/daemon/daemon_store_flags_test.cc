// ddprund's store settings (--store and the etcd client's, daemon_config.cc): memory stays the
// default with nothing else to give; etcd needs its members; each wrong combination is one line
// naming what to give; the configuration file takes the same settings, checked on their line.
#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "daemon_config.h"
#include "daemon_config_file.h"
#include "support/child_process.h"

namespace ddprun {
namespace {

// The usage error of `args`, or "" when they parse.
std::string ErrorOf(const std::vector<std::string>& args) {
  auto parsed = ParseDaemonCommandLine(args);
  auto* error = std::get_if<DaemonUsageError>(&parsed);
  return error ? error->message : "";
}

TEST_CASE("ddprund keeps its jobs' store in memory unless told to use etcd") {
  auto parsed = ParseDaemonCommandLine({});
  REQUIRE(std::holds_alternative<DaemonConfig>(parsed));
  CHECK_FALSE(std::get<DaemonConfig>(parsed).store.etcd);

  parsed = ParseDaemonCommandLine(
      {"--store=etcd", "--etcd-endpoints", "10.0.0.1:2379, 10.0.0.2:2379", "--etcd_prefix=/a/"});
  REQUIRE(std::holds_alternative<DaemonConfig>(parsed));
  const DaemonStoreConfig& store = std::get<DaemonConfig>(parsed).store;
  CHECK(store.etcd);
  CHECK(store.etcd_endpoints == std::vector<std::string>{"10.0.0.1:2379", "10.0.0.2:2379"});
  CHECK(store.etcd_prefix == "/a/");
}

TEST_CASE("ddprund's store settings refuse what cannot work, in one line") {
  CHECK(ErrorOf({"--store=redis"}) == "--store must be memory or etcd, not 'redis'");
  CHECK(ErrorOf({"--store=etcd"}).find("needs --etcd-endpoints") != std::string::npos);
  CHECK(ErrorOf({"--etcd-endpoints=h:2379"}) == "the --etcd-* settings need --store=etcd");
  CHECK(ErrorOf({"--store=etcd", "--etcd-endpoints=h"}).find("'h' is not HOST:PORT") !=
        std::string::npos);
  CHECK(ErrorOf({"--store=etcd", "--etcd-endpoints=h:1", "--etcd-prefix=/a"})
            .find("must end with '/'") != std::string::npos);
  CHECK(ErrorOf({"--store=etcd", "--etcd-endpoints=h:1", "--etcd-user=u"}) ==
        "--etcd-user and --etcd-password-file go together");
  CHECK(ErrorOf({"--store=etcd", "--etcd-endpoints=h:1", "--etcd-tls-cert=/nonexistent"})
            .find("--etcd-tls-cert and --etcd-tls-key go together") != std::string::npos);
}

TEST_CASE("ddprund reads etcd's password from its file, and its store settings from --config") {
  testing::ScratchDir dir;
  std::ofstream(dir / "password") << "pa55\n";
  std::ofstream(dir / "ddprund.conf")
      << "store = etcd\netcd_endpoints = a:2379,b:2379\n"
      << "etcd_user = ddprun\netcd_password_file = " << (dir / "password") << "\n";
  auto parsed = ParseDaemonCommandLine({"--config", dir / "ddprund.conf"});
  REQUIRE(std::holds_alternative<DaemonConfig>(parsed));
  const DaemonStoreConfig& store = std::get<DaemonConfig>(parsed).store;
  CHECK(store.etcd);
  CHECK(store.etcd_endpoints.size() == 2);
  CHECK(store.etcd_user == "ddprun");
  CHECK(store.etcd_password == "pa55");

  std::ofstream(dir / "bad.conf") << "# etcd\nstore = etcd\netcd_endpoints = a:2379,b\n";
  auto bad = ReadDaemonConfigFile(dir / "bad.conf");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message().find("bad.conf:3: etcd_endpoints: etcd endpoint 'b'") !=
        std::string::npos);
  std::ofstream(dir / "memory.conf") << "store = memroy\n";
  CHECK(ReadDaemonConfigFile(dir / "memory.conf")
            .status()
            .message()
            .find("'memroy' is neither memory nor etcd") != std::string::npos);
}

}  // namespace
}  // namespace ddprun
