// ddprund's flag table as a whole (daemon_config.cc): each spelling is one flag's, and the
// command line and the configuration file (daemon_config_file.cc) know the same settings, so
// that neither gains one the other lacks.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "daemon_config.h"
#include "daemon_config_file.h"

namespace ddprun {
namespace {

TEST_CASE("each spelling of a ddprund flag belongs to one flag") {
  DaemonFlagValues values;
  std::map<std::string, std::string> owner;
  for (const FlagSpec& flag : DaemonFlags(values)) {
    for (const std::string& spelling : Spellings(flag)) {
      INFO(spelling << " of " << flag.name);
      CHECK(owner.emplace(spelling, std::string(flag.name)).second);
    }
  }
}

TEST_CASE("every ddprund flag but --config and --version is a key of its file, and back") {
  DaemonFlagValues values;
  std::set<std::string> from_flags;
  for (const FlagSpec& flag : DaemonFlags(values)) {
    CHECK_FALSE(flag.pet);
    if (flag.name == "--config" || flag.name == "--version") continue;
    from_flags.insert(DaemonConfigFileKeyOf(flag.name));
  }
  const auto keys = DaemonConfigFileKeys();
  CHECK(from_flags == std::set<std::string>(keys.begin(), keys.end()));
}

TEST_CASE("a ddprund flag row fills its field, in either spelling") {
  auto parsed =
      ParseDaemonCommandLine({"--port_file=/tmp/p", "--agent-program=/bin/a", "--port=0"});
  REQUIRE(std::holds_alternative<DaemonConfig>(parsed));
  CHECK(std::get<DaemonConfig>(parsed).port_file == "/tmp/p");
  CHECK(std::get<DaemonConfig>(parsed).agent_program == "/bin/a");
  CHECK(std::get<DaemonConfig>(parsed).port == 0);
  auto wrong = ParseDaemonCommandLine({"--prot=1"});
  REQUIRE(std::holds_alternative<DaemonUsageError>(wrong));
  CHECK(std::get<DaemonUsageError>(wrong).message.find("--prot") != std::string::npos);
}

TEST_CASE("the metrics port is off unless set, and a bad one or an open one is a usage error") {
  auto off = ParseDaemonCommandLine({});
  REQUIRE(std::holds_alternative<DaemonConfig>(off));
  CHECK(std::get<DaemonConfig>(off).metrics_port == -1);
  auto on = ParseDaemonCommandLine({"--metrics-port=0", "--metrics_bind=localhost"});
  REQUIRE(std::holds_alternative<DaemonConfig>(on));
  CHECK(std::get<DaemonConfig>(on).metrics_port == 0);
  CHECK(std::get<DaemonConfig>(on).metrics_bind == "localhost");
  const std::map<std::vector<std::string>, std::string> refused = {
      {{"--metrics-port=70000"}, "--metrics-port must be from 0 to 65535, not 70000"},
      {{"--metrics-port=0", "--metrics-bind=example.org"},
       "--metrics-bind must be an IPv4 address"},
      {{"--metrics-port=0", "--metrics-bind=0.0.0.0"},
       "--metrics-bind 0.0.0.0 would show the jobs to other hosts without a token"}};
  for (const auto& [args, message] : refused) {
    auto parsed = ParseDaemonCommandLine(args);
    REQUIRE(std::holds_alternative<DaemonUsageError>(parsed));
    INFO(std::get<DaemonUsageError>(parsed).message);
    CHECK(std::get<DaemonUsageError>(parsed).message.find(message) != std::string::npos);
  }
}

}  // namespace
}  // namespace ddprun
