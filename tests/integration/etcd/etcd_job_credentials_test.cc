// EtcdJobCredentials (rendezvous/etcd/etcd_job_credentials.h) over a real etcd member: a job's
// store credential is recorded once, by the first daemon to lead the job, and every later one
// takes it; any daemon accepts it, from a cache whose age a stepped clock sets; a revoked one is
// refused once the cache is that old, and a wrong one is asked of etcd again only after a pause.
#include "ddprun/etcd/etcd_job_credentials.h"

#include <catch2/catch.hpp>

#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::etcd {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;
using testing::SkipTest;

TEST_CASE("a job's credential is recorded once, accepted by every daemon, and revoked") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  ManualTime time;
  const JobCredentialsSettings settings{.cache_for = 1000ms, .recheck_after = 100ms};
  EtcdJobCredentials leader(*client, settings, time);
  EtcdJobCredentials other(*client, settings, time);

  REQUIRE(leader.Establish("job/1", "first-secret").value() == "first-secret");
  // A later leader, or a resuming node that offers another, gets the recorded one.
  CHECK(other.Establish("job/1", "second-secret").value() == "first-secret");
  CHECK(client->Get(leader.KeyOf("job/1"))->value().value == "first-secret");
  CHECK(other.Establish("job/2", "job-2-secret").value() == "job-2-secret");

  CHECK(other.Accepts("job/1", "first-secret"));
  CHECK_FALSE(other.Accepts("job/1", "second-secret"));
  CHECK_FALSE(other.Accepts("job/2", "first-secret"));  // one job's credential opens no other's
  CHECK_FALSE(other.Accepts("job/3", "first-secret"));  // nor a job that has none

  SECTION("a revoked credential is refused once the other daemon's answer is old") {
    leader.Revoke("job/1");
    CHECK_FALSE(leader.Accepts("job/1", "first-secret"));  // the revoking daemon at once
    CHECK(other.Accepts("job/1", "first-secret"));         // the cache's answer
    time.Advance(999ms);
    CHECK(other.Accepts("job/1", "first-secret"));
    time.Advance(1ms);
    CHECK_FALSE(other.Accepts("job/1", "first-secret"));
    // A new job under the old id gets a new credential.
    CHECK(other.Establish("job/1", "third-secret").value() == "third-secret");
  }
  SECTION("a wrong credential is asked of etcd again only after recheck_after") {
    CHECK_FALSE(other.Accepts("job/2", "job-2-secret-new"));
    // The job's credential changes under the cache (a new job under the same id).
    leader.Revoke("job/2");
    REQUIRE(leader.Establish("job/2", "job-2-secret-new").value() == "job-2-secret-new");
    CHECK_FALSE(other.Accepts("job/2", "job-2-secret-new"));  // the refusal read 0 ms ago
    time.Advance(100ms);
    CHECK(other.Accepts("job/2", "job-2-secret-new"));
  }
}

TEST_CASE("a daemon that cannot reach etcd accepts no credential it has not read") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobCredentials credentials(*client, JobCredentialsSettings{});
  REQUIRE(credentials.Establish("job", "secret").ok());
  cluster.Kill(0);
  CHECK_FALSE(credentials.Accepts("job", "secret"));
  CHECK(credentials.Establish("job", "secret").status().code() == StatusCode::kUnavailable);
}

}  // namespace
}  // namespace ddprun::etcd
