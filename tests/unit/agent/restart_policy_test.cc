// The restart policy: --max_restarts counts group failures.
#include "ddprun/agent/restart_policy.h"

#include <catch2/catch.hpp>

using ddprun::RestartPolicy;

TEST_CASE("with max_restarts N, N failures restart and the next one gives up") {
  RestartPolicy policy(2);
  CHECK(policy.OnGroupFailure() == RestartPolicy::Decision::kRestart);
  CHECK(policy.restarts_used() == 1);
  CHECK(policy.OnGroupFailure() == RestartPolicy::Decision::kRestart);
  CHECK(policy.restarts_left() == 0);
  CHECK(policy.OnGroupFailure() == RestartPolicy::Decision::kGiveUp);
  CHECK(policy.restarts_used() == 2);
}

TEST_CASE("with max_restarts 0 the first failure gives up") {
  RestartPolicy policy(0);
  CHECK(policy.OnGroupFailure() == RestartPolicy::Decision::kGiveUp);
  CHECK(policy.restarts_used() == 0);
}
