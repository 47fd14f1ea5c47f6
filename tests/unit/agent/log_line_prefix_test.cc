// LogLinePrefix: ddprun's default, and torchrun's template filled in as Python's
// string.Template.safe_substitute fills it.
#include "ddprun/agent/log_line_prefix.h"

#include <limits.h>
#include <unistd.h>

#include <catch2/catch.hpp>

using namespace ddprun;

TEST_CASE("without a template each line starts with the global rank", "[log_line_prefix]") {
  CHECK(LogLinePrefix(std::nullopt, 5, 1, "default") == "[rank5]: ");
}

TEST_CASE("a template names the rank, the local rank and the role, braced or not",
          "[log_line_prefix]") {
  CHECK(LogLinePrefix("[${role_name}${rank}|${local_rank}]:", 5, 1, "trainer") == "[trainer5|1]:");
  CHECK(LogLinePrefix("$rank-$local_rank ", 12, 0, "default") == "12-0 ");
  CHECK(LogLinePrefix("$rank_x", 3, 0, "default") == "$rank_x");  // another identifier
  CHECK(LogLinePrefix("${rank}x", 3, 0, "default") == "3x");
}

TEST_CASE("${hostname} is the host's name, as torchrun 2.x fills it", "[log_line_prefix]") {
  char name[HOST_NAME_MAX + 1] = {};
  REQUIRE(::gethostname(name, sizeof(name) - 1) == 0);
  REQUIRE(name[0] != '\0');
  CHECK(LogLinePrefix("${hostname}:${rank}: ", 3, 0, "default") == std::string(name) + ":3: ");
}

TEST_CASE("what safe_substitute leaves alone stays as written", "[log_line_prefix]") {
  CHECK(LogLinePrefix("$$rank ", 3, 0, "default") == "$rank ");
  CHECK(LogLinePrefix("${host} ${rank", 3, 0, "default") == "${host} ${rank");
  CHECK(LogLinePrefix("$RANK $1 $ end$", 3, 0, "default") == "$RANK $1 $ end$");
  CHECK(LogLinePrefix("", 3, 0, "default").empty());
}
