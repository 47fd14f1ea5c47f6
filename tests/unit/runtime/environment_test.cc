// ddp::Environment: reading the contract, and clear errors without it.
#include "ddp/environment.h"

#include <catch2/catch.hpp>
#include <cstdlib>

namespace {

void SetContract() {
  for (auto [name, value] : {std::pair{"RANK", "1"},
                             {"WORLD_SIZE", "2"},
                             {"LOCAL_RANK", "1"},
                             {"LOCAL_WORLD_SIZE", "2"},
                             {"GROUP_RANK", "0"},
                             {"TORCHELASTIC_RESTART_COUNT", "0"},
                             {"MASTER_ADDR", "127.0.0.1"},
                             {"MASTER_PORT", "29500"},
                             {"DDPRUN_ROUND", "0"},
                             {"DDPRUN_JOB_ID", "j"},
                             {"DDPRUN_STORE_ADDR", "127.0.0.1:1"}}) {
    ::setenv(name, value, 1);
  }
}

}  // namespace

TEST_CASE("the environment ddprun sets is read whole") {
  SetContract();
  auto env = ddp::Environment::FromProcess();
  REQUIRE(env.ok());
  CHECK(env->rank == 1);
  CHECK(env->world_size == 2);
  CHECK(env->master_port == 29500);
  CHECK(env->job_id == "j");
}

TEST_CASE("a missing or malformed variable is named in the error") {
  SetContract();
  ::unsetenv("WORLD_SIZE");
  auto missing = ddp::Environment::FromProcess();
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message() == "WORLD_SIZE is not set; run this program under ddprun");
  ::setenv("WORLD_SIZE", "two", 1);
  auto malformed = ddp::Environment::FromProcess();
  REQUIRE_FALSE(malformed.ok());
  CHECK(malformed.status().message().find("WORLD_SIZE must be an integer") != std::string::npos);
  ::setenv("WORLD_SIZE", "1", 1);
  auto rank_too_big = ddp::Environment::FromProcess();
  REQUIRE_FALSE(rank_too_big.ok());
  CHECK(rank_too_big.status().message().find("not below WORLD_SIZE") != std::string::npos);
}
