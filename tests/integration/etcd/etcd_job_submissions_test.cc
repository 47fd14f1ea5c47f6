// EtcdJobSubmissions (rendezvous/etcd/etcd_job_submissions.h) over a real etcd member: a job id
// runs for one submission at a time, whichever daemons its parts start at; holds of two
// submissions at once leave one; the id is free again once every part has ended, or once a dead
// daemon's lease has run out.
#include "ddprun/etcd/etcd_job_submissions.h"

#include <catch2/catch.hpp>
#include <future>

#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::etcd {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;
using testing::SkipTest;

JobSubmissionsSettings Daemon(const std::string& holder,
                              std::chrono::seconds ttl = std::chrono::seconds(10)) {
  return {.prefix = "/ddprun/", .holder = holder, .ttl = ttl};
}

TEST_CASE("a job id runs for one submission at a time, at any daemon, until its parts end") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobSubmissions a(*client, Daemon("daemon-a"));
  EtcdJobSubmissions b(*client, Daemon("daemon-b"));

  REQUIRE(a.Hold("job/1", "first").ok());
  CHECK(a.Hold("job/1", "first").code() == StatusCode::kAlreadyExists);  // one part per daemon
  CHECK(b.Check("job/1", "first").ok());
  CHECK(b.Hold("job/1", "first").ok());  // the same submission's part on another host
  CHECK(b.Hold("job/2", "first").ok());  // another job id is another job
  for (EtcdJobSubmissions* daemon : {&a, &b}) {
    Status other = daemon->Check("job/1", "second");
    CHECK(other.code() == StatusCode::kAlreadyExists);
    CHECK(other.message().find("job job/1 runs already") != std::string::npos);
    CHECK(other.message().find("another --rdzv_id") != std::string::npos);
  }
  CHECK(a.Hold("job/1", "second").code() == StatusCode::kAlreadyExists);

  a.LetGo("job/1");
  CHECK(a.Check("job/1", "second").code() == StatusCode::kAlreadyExists);  // b's part runs
  b.LetGo("job/1");
  CHECK(a.Hold("job/1", "second").ok());
}

TEST_CASE("of two submissions of one job id held at once at two daemons, one holds it") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client_a = cluster.OpenClient();
  auto client_b = cluster.OpenClient();
  EtcdJobSubmissions a(*client_a, Daemon("daemon-a"));
  EtcdJobSubmissions b(*client_b, Daemon("daemon-b"));
  for (int round = 0; round < 20; ++round) {
    const std::string job = "race-" + std::to_string(round);
    auto held_by_b = std::async(std::launch::async, [&] { return b.Hold(job, "from-b"); });
    const Status held_by_a = a.Hold(job, "from-a");
    const Status b_status = held_by_b.get();
    INFO(job << ": a " << held_by_a.ToString() << ", b " << b_status.ToString());
    CHECK(held_by_a.ok() != b_status.ok());
    CHECK((held_by_a.ok() ? b_status : held_by_a).code() == StatusCode::kAlreadyExists);
  }
}

TEST_CASE("a dead daemon's part of a job goes with its lease, and the job id is free again") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobSubmissions survivor(*client, Daemon("survivor"));
  {
    EtcdJobSubmissions dying(*client, Daemon("dying", std::chrono::seconds(2)));
    REQUIRE(dying.Hold("job", "first").ok());
  }  // stops renewing, lets go of nothing: as kill -9 would
  CHECK(survivor.Hold("job", "second").code() == StatusCode::kAlreadyExists);
  // etcd's own clock ends the lease (2 s, rounded up to its minimum): the part's delete.
  const std::string part = "/ddprun/jobs/job/parts/dying";
  auto recorded = client->Get(part);
  REQUIRE(recorded.ok());
  REQUIRE(recorded->has_value());
  auto change = client->WaitForChange(part, (*recorded)->mod_revision, 30s);
  REQUIRE(change.ok());
  REQUIRE(change->has_value());
  CHECK((*change)->deleted);
  Status held = survivor.Hold("job", "second");
  INFO(held.ToString());
  CHECK(held.ok());
}

}  // namespace
}  // namespace ddprun::etcd
