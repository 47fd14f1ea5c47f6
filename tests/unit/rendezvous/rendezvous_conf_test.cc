// --rdzv_conf: ddprun's keys, torchrun's keys, and mistakes.
#include "ddprun/rendezvous/rendezvous_conf.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

TEST_CASE("rdzv_conf sets the rendezvous timeouts in seconds") {
  auto settings = ParseRendezvousConf("join_timeout=120,last_call_timeout=0.5,heartbeat_timeout=2");
  REQUIRE(settings.ok());
  CHECK(settings->join_timeout == 120s);
  CHECK(settings->last_call_timeout == 500ms);
  CHECK(settings->heartbeat_timeout == 2s);
}

TEST_CASE("rdzv_conf keeps the defaults it does not mention") {
  RendezvousSettings defaults;
  auto settings = ParseRendezvousConf("", defaults);
  REQUIRE(settings.ok());
  CHECK(settings->join_timeout == defaults.join_timeout);
  CHECK(settings->heartbeat_timeout == defaults.heartbeat_timeout);
}

TEST_CASE("torchrun's own rdzv_conf keys are accepted without effect") {
  CHECK(ParseRendezvousConf("read_timeout=60,is_host=1,close_timeout=30,use_libuv=0").ok());
}

TEST_CASE("an unknown key or a bad value names the problem") {
  auto unknown = ParseRendezvousConf("join_timout=5");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().message().find("unknown key 'join_timout'") != std::string::npos);
  for (const char* bad : {"join_timeout=0", "join_timeout=-1", "join_timeout=abc",
                          "join_timeout=", "heartbeat_timeout=1e99", "=5", "join_timeout"}) {
    INFO(bad);
    CHECK(ParseRendezvousConf(bad).status().code() == StatusCode::kInvalidArgument);
  }
}

TEST_CASE("rdzv_conf sets the hang timeouts too") {
  auto settings = ParseRendezvousConf("hang_timeout=30,hang_first_timeout=600");
  REQUIRE(settings.ok());
  CHECK(settings->hang.timeout == 30s);
  CHECK(settings->hang.first_timeout == 600s);
  CHECK(ParseRendezvousConf("hang_timeout=-2").status().code() == StatusCode::kInvalidArgument);
}
