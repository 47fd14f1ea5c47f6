// EtcdJobLeadership (rendezvous/etcd/etcd_job_leadership.h) over a real etcd member: one daemon
// leads a job at a time, the others are told who does; a released job goes to the next claim;
// a lead whose lease is gone is reported lost, so the daemon stops acting for the job.
#include "ddprun/etcd/etcd_job_leadership.h"

#include <catch2/catch.hpp>
#include <future>

#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::etcd {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;
using testing::SkipTest;

JobLeadershipSettings Daemon(const std::string& holder) {
  JobLeadershipSettings settings;
  settings.holder = holder;
  return settings;
}

TEST_CASE("one daemon leads a job, the others are told who and take it once it is released") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobLeadership a(*client, Daemon("daemon a"));
  EtcdJobLeadership b(*client, Daemon("daemon b"));

  REQUIRE(a.Claim("job/1").ok());
  CHECK(a.Leads("job/1"));
  CHECK(a.Claim("job/1").ok());  // a claim of a job it leads changes nothing
  Status refused = b.Claim("job/1");
  CHECK(refused.code() == StatusCode::kUnavailable);
  CHECK(refused.message().find("led by another server (daemon a)") != std::string::npos);
  CHECK_FALSE(b.Leads("job/1"));
  CHECK(b.Claim("job/2").ok());  // each job has a leader of its own
  CHECK(client->Get("/ddprun/jobs/job%2F1/leader")->value().value == "daemon a");

  a.Release("job/1");
  CHECK_FALSE(a.Leads("job/1"));
  REQUIRE(b.Claim("job/1").ok());
  CHECK(b.Leads("job/1"));
  CHECK(a.Claim("job/1").code() == StatusCode::kUnavailable);
}

TEST_CASE("a lead whose lease is gone is reported lost, and another daemon may take the job") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobLeadership a(*client, Daemon("daemon a"));
  std::promise<std::string> lost;
  a.SetLostCallback([&lost](const std::string& job_id) { lost.set_value(job_id); });
  REQUIRE(a.Claim("j").ok());

  // The lease ends as it would when etcd expired it: the key goes with it.
  auto key = client->Get(a.KeyOf("j"));
  REQUIRE(key.ok());
  REQUIRE(key->has_value());
  REQUIRE(client->RevokeLease((*key)->lease).ok());
  auto reported = lost.get_future();
  // The next renewal (a third of the 2 s lease away) finds the lease gone.
  REQUIRE(reported.wait_for(30s) == std::future_status::ready);
  CHECK(reported.get() == "j");
  CHECK_FALSE(a.Leads("j"));

  EtcdJobLeadership b(*client, Daemon("daemon b"));
  CHECK(b.Claim("j").ok());
  a.SetLostCallback(nullptr);
}

TEST_CASE(
    "a job's record is written only by its leader: a deposed leader's write fails, the new "
    "leader's stands, and forgetting the job removes it") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobLeadership a(*client, Daemon("daemon a"));
  EtcdJobLeadership b(*client, Daemon("daemon b"));
  CHECK(a.Recorded("j").value() == std::nullopt);
  CHECK(a.Record("j", "round 0", false).code() == StatusCode::kFailedPrecondition);  // no lead
  REQUIRE(a.Claim("j").ok());
  REQUIRE(a.Record("j", "round 0", false).ok());
  CHECK(b.Recorded("j").value() == std::optional<std::string>("round 0"));

  // a's lease is revoked behind its back, and b takes the job: a's next write is refused, by
  // etcd's fence or, once a's renewal has found the lease gone, by a itself.
  auto key = client->Get(a.KeyOf("j"));
  REQUIRE(key.ok());
  REQUIRE(key->has_value());
  REQUIRE(client->RevokeLease((*key)->lease).ok());
  REQUIRE(b.Claim("j").ok());
  REQUIRE(b.Record("j", "round 1", false).ok());
  Status deposed = a.Record("j", "round 0 again", false);
  CHECK(deposed.code() == StatusCode::kFailedPrecondition);
  CHECK(b.Recorded("j").value() == std::optional<std::string>("round 1"));

  // The job's last record goes with a lease of its own; forgetting the job removes it now.
  REQUIRE(b.Record("j", "complete", true).ok());
  auto ended = client->Get(b.RecordKeyOf("j"));
  REQUIRE(ended.ok());
  REQUIRE(ended->has_value());
  CHECK((*ended)->lease != 0);
  b.Forget("j");
  CHECK(b.Recorded("j").value() == std::nullopt);
  CHECK_FALSE(b.Leads("j"));
}

}  // namespace
}  // namespace ddprun::etcd
