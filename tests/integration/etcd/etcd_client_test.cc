// ddprun's etcd client (rendezvous/etcd/) against real etcd members (support/etcd_cluster.h):
// keys, prefixes, transactions that create a key only if it is absent, leases that take their
// keys with them, and a client that keeps working while a minority of a 3-member cluster is
// down, says so (one line, naming each member) when a majority is, and works again when a
// quorum is back; a call goes on through an outage shorter than its time. Skipped where Debian's
// etcd-server is not installed.
#include "ddprun/etcd/etcd_client.h"

#include <catch2/catch.hpp>
#include <future>

#include "ddprun/etcd/leadership.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::etcd {
namespace {

using testing::EtcdCluster;
using testing::SkipTest;

TEST_CASE("the etcd client reads and writes keys, prefixes and guarded transactions") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();

  auto missing = client->Get("/ddprun/none");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());

  auto first = client->Put("/ddprun/jobs/a", "1");
  REQUIRE(first.ok());
  auto second = client->Put("/ddprun/jobs/b", std::string("\0\xff", 2));
  REQUIRE(second.ok());
  CHECK(*second > *first);
  REQUIRE(client->Put("/ddprun/jobsx", "not under the prefix").ok());

  auto a = client->Get("/ddprun/jobs/a");
  REQUIRE(a.ok());
  REQUIRE(a->has_value());
  CHECK((*a)->value == "1");
  CHECK((*a)->mod_revision == *first);

  auto jobs = client->GetPrefix("/ddprun/jobs/");
  REQUIRE(jobs.ok());
  REQUIRE(jobs->kvs.size() == 2);
  CHECK(jobs->kvs[1].value == std::string("\0\xff", 2));
  CHECK(jobs->revision >= *second);

  auto created = client->Txn(CreateIfAbsent("/ddprun/leader", "daemon-1"));
  REQUIRE(created.ok());
  CHECK(created->succeeded);
  auto refused = client->Txn(CreateIfAbsent("/ddprun/leader", "daemon-2"));
  REQUIRE(refused.ok());
  CHECK_FALSE(refused->succeeded);
  CHECK(client->Get("/ddprun/leader")->value().value == "daemon-1");

  auto deleted = client->DeletePrefix("/ddprun/jobs/");
  REQUIRE(deleted.ok());
  CHECK(*deleted == 2);
  CHECK(client->GetPrefix("/ddprun/jobs/")->kvs.empty());
  CHECK(client->Get("/ddprun/jobsx")->has_value());
}

TEST_CASE("a wait for a key's change sees a put and a delete, and times out without one") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  const int64_t start = client->Put("/ddprun/k", "0").value();
  auto quiet = client->WaitForChange("/ddprun/k", start, std::chrono::milliseconds(200));
  REQUIRE(quiet.ok());
  CHECK_FALSE(quiet->has_value());

  const int64_t put = client->Put("/ddprun/k", "1").value();
  REQUIRE(client->DeletePrefix("/ddprun/k").value() == 1);
  // Both happened before the waits began: each is found from the revision it follows.
  auto first = client->WaitForChange("/ddprun/k", start, std::chrono::seconds(10));
  REQUIRE(first.ok());
  REQUIRE(first->has_value());
  CHECK_FALSE((*first)->deleted);
  CHECK((*first)->kv.value == "1");
  CHECK((*first)->kv.mod_revision == put);
  auto second = client->WaitForChange("/ddprun/k", put, std::chrono::seconds(10));
  REQUIRE(second.ok());
  REQUIRE(second->has_value());
  CHECK((*second)->deleted);
}

TEST_CASE("an etcd lease keeps its keys while renewed, and takes them when revoked") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  auto lease = client->GrantLease(std::chrono::seconds(30));
  REQUIRE(lease.ok());
  REQUIRE(client->Txn(CreateIfAbsent("/ddprun/leader", "me", *lease))->succeeded);
  CHECK(client->Get("/ddprun/leader")->value().lease == *lease);
  auto left = client->KeepLeaseAlive(*lease);
  REQUIRE(left.ok());
  CHECK(*left > 0);
  CHECK(*left <= 30);

  REQUIRE(client->RevokeLease(*lease).ok());
  CHECK_FALSE(client->Get("/ddprun/leader")->has_value());
  auto gone = client->KeepLeaseAlive(*lease);
  CHECK(gone.status().code() == StatusCode::kFailedPrecondition);
  CHECK(gone.status().message().find("is gone") != std::string::npos);
}

TEST_CASE("the etcd client moves to another member while a minority is down") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(3);
  auto client = cluster.OpenClient();
  REQUIRE(client->Put("/ddprun/k", "before").ok());
  const std::string answering = client->MemberStatus().value().description;
  CHECK(answering.rfind(cluster.ClientEndpoint(0), 0) == 0);

  cluster.Kill(0);  // the member the client was using
  REQUIRE(client->Put("/ddprun/k", "one down").ok());
  CHECK(client->Get("/ddprun/k")->value().value == "one down");
  CHECK(client->MemberStatus().value().description.rfind(cluster.ClientEndpoint(0), 0) != 0);

  cluster.Kill(1);  // no quorum: writes and linearizable reads cannot be served
  auto no_quorum = client->Put("/ddprun/k", "two down");
  REQUIRE_FALSE(no_quorum.ok());
  CHECK(no_quorum.status().code() == StatusCode::kUnavailable);
  const std::string message = no_quorum.status().message();
  CHECK(message.find('\n') == std::string::npos);
  for (const std::string& endpoint : cluster.ClientEndpoints()) {
    CHECK(message.find(endpoint) != std::string::npos);
  }

  cluster.Restart(1);  // a quorum again (members 1 and 2); member 0 stays down
  REQUIRE(client->Put("/ddprun/k", "quorum back").ok());
  CHECK(client->Get("/ddprun/k")->value().value == "quorum back");
}

TEST_CASE("a call made while every member is down goes on until a quorum is back") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(3);
  // A call time far beyond the members' start, so that only a client that gives up after one
  // round over the members fails.
  auto client = EtcdClient::Open(
      {.endpoints = cluster.ClientEndpoints(), .call_timeout = std::chrono::seconds(60)});
  REQUIRE(client.ok());
  REQUIRE((*client)->Put("/ddprun/k", "before").ok());
  for (int i = 0; i < cluster.size(); ++i) cluster.Kill(i);

  // The put's first round meets three refused connections; the members then come back, and
  // elect a leader.
  auto put = std::async(std::launch::async, [&] { return (*client)->Put("/ddprun/k", "after"); });
  cluster.Restart(0, false);
  cluster.Restart(1, false);
  cluster.WaitReady(0);
  cluster.WaitReady(1);
  const Status put_status = put.get().status();
  INFO(put_status.ToString());
  REQUIRE(put_status.ok());
  CHECK((*client)->Get("/ddprun/k")->value().value == "after");
}

TEST_CASE("a malformed etcd endpoint list is refused naming the entry") {
  CHECK(ParseEtcdEndpoints("h1:2379, h2:2379").value() ==
        std::vector<std::string>{"h1:2379", "h2:2379"});
  for (const char* bad : {"", "h1", "h1:", ":2379", "h1:2379,,h2:2379", "h1:99999"}) {
    INFO(bad);
    auto parsed = ParseEtcdEndpoints(bad);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
  }
  CHECK(ParseEtcdEndpoints("h1:2379,h2").status().message().find("'h2'") != std::string::npos);
  CHECK(PrefixEnd("/a/") == "/a0");
  CHECK(PrefixEnd(std::string("a\xff", 2)) == "b");
}

}  // namespace
}  // namespace ddprun::etcd
