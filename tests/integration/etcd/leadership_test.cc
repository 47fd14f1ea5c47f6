// Leadership (rendezvous/etcd/leadership.h) over a real etcd member: one holder leads at a time;
// a deposed leader's fenced write fails in etcd; a leader stops acting by its own clock before
// its lease can end (stepped time); a leader that stops renewing loses the key when its lease
// ends, and another holder takes it; resigning hands it over at once.
#include "ddprun/etcd/leadership.h"

#include <catch2/catch.hpp>

#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::etcd {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;
using testing::SkipTest;

constexpr char kKey[] = "/ddprun/jobs/j/leader";

// A transaction putting the job's state, as a leader writes it.
etcdserverpb::TxnRequest PutState(const std::string& value) {
  etcdserverpb::TxnRequest txn;
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key("/ddprun/jobs/j/state");
  put->set_value(value);
  return txn;
}

std::string StateIn(EtcdClient& client) {
  auto state = client.Get("/ddprun/jobs/j/state");
  REQUIRE(state.ok());
  return state->has_value() ? (*state)->value : "";
}

TEST_CASE("one holder leads at a time, and a deposed leader's fenced write fails") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  Leadership a(*client, {.key = kKey, .holder = "a", .ttl = 30s});
  Leadership b(*client, {.key = kKey, .holder = "b", .ttl = 30s});
  REQUIRE(a.Step().value());
  REQUIRE_FALSE(b.Step().value());
  CHECK(a.MayAct());
  CHECK_FALSE(b.MayAct());
  CHECK(client->Get(kKey)->value().value == "a");

  REQUIRE(a.FencedTxn(PutState("round 1 by a")).ok());
  CHECK(StateIn(*client) == "round 1 by a");
  auto refused = b.FencedTxn(PutState("round 1 by b"));
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK(StateIn(*client) == "round 1 by a");

  // a is deposed without knowing it (its key is gone, as when its lease ran out unseen), and b
  // takes over: a's clock still lets it act, but etcd refuses its write.
  REQUIRE(client->DeletePrefix(kKey).value() == 1);
  REQUIRE(b.Step().value());
  REQUIRE(a.MayAct());
  auto stale = a.FencedTxn(PutState("round 2 by a"));
  CHECK(stale.status().code() == StatusCode::kFailedPrecondition);
  CHECK(stale.status().message().find("no longer the leader") != std::string::npos);
  CHECK_FALSE(a.leads());
  REQUIRE(b.FencedTxn(PutState("round 2 by b")).ok());
  CHECK(StateIn(*client) == "round 2 by b");
}

TEST_CASE("a leader stops acting by its own clock before its lease can run out") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  ManualTime time;
  Leadership a(*client, {.key = kKey, .holder = "a", .ttl = 30s, .margin = 500ms}, time);
  REQUIRE(a.Step().value());
  time.Advance(30s - 500ms - 1ms);
  CHECK(a.MayAct());
  time.Advance(2ms);  // past ttl - margin since the grant was sent, and no renewal
  CHECK_FALSE(a.MayAct());
  CHECK(a.leads());  // etcd still has its key; it just may not act on it
  auto refused = a.FencedTxn(PutState("late"));
  CHECK(refused.status().code() == StatusCode::kFailedPrecondition);
  CHECK(StateIn(*client).empty());

  REQUIRE(a.Step().value());  // a renewal starts a new term of acting
  CHECK(a.MayAct());
  REQUIRE(a.FencedTxn(PutState("renewed")).ok());
  CHECK(StateIn(*client) == "renewed");
}

TEST_CASE("a leader that stops renewing loses the key with its lease, and another takes it") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  Leadership a(*client, {.key = kKey, .holder = "a", .ttl = 1s, .margin = 200ms});
  Leadership b(*client, {.key = kKey, .holder = "b", .ttl = 30s});
  REQUIRE(a.Step().value());
  const int64_t created = a.create_revision();
  REQUIRE_FALSE(b.Step().value());

  // a goes silent; etcd expires its lease (1 s, or etcd's minimum) and deletes the key.
  auto change = client->WaitForChange(kKey, created, std::chrono::milliseconds(30'000));
  REQUIRE(change.ok());
  REQUIRE(change->has_value());
  CHECK((*change)->deleted);
  CHECK_FALSE(a.MayAct());  // its own clock ran out before etcd's did
  REQUIRE(b.Step().value());
  CHECK(client->Get(kKey)->value().value == "b");
  CHECK_FALSE(a.Step().value());  // its lease is gone, and b holds the key
  CHECK_FALSE(a.leads());
}

TEST_CASE("a leader that resigns hands the key over at once") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  Leadership a(*client, {.key = kKey, .holder = "a", .ttl = 30s});
  Leadership b(*client, {.key = kKey, .holder = "b", .ttl = 30s});
  REQUIRE(a.Step().value());
  REQUIRE(a.Resign().ok());
  CHECK_FALSE(a.leads());
  CHECK_FALSE(client->Get(kKey)->has_value());
  REQUIRE(b.Step().value());
}

}  // namespace
}  // namespace ddprun::etcd
