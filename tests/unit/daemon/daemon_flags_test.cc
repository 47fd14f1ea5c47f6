// ddprund's flag table as a whole (daemon_config.cc): each spelling is one flag's, and the
// command line and the configuration file (daemon_config_file.cc) know the same settings, so
// that neither gains one the other lacks.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

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

}  // namespace
}  // namespace ddprun
