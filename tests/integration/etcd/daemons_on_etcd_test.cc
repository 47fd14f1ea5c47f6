// ddprund with `--store=etcd`, as real processes over real etcd members: every daemon pointed at
// one cluster serves the same jobs' store keys (what workers reach through DDPRUN_STORE_ADDR),
// and a daemon's kill -9 loses none of them (docs/control_plane.md, invariant 4). Also the
// in-process server over the etcd store, whose calls run off gRPC's threads.
#include <signal.h>

#include <catch2/catch.hpp>
#include <future>

#include "ddprun/etcd/etcd_job_store.h"
#include "ddprun/rendezvous/rendezvous_server.h"
#include "ddprun/rendezvous/store_client.h"
#include "support/child_process.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"
#include "support/test_paths.h"

namespace ddprun::testing {
namespace {

using namespace std::chrono_literals;

const std::string kDdprund = ddprun::testing::paths::kDdprund;

std::unique_ptr<StoreClient> ClientOf(const std::string& address, const std::string& job) {
  StoreClientOptions options;
  options.address = address;
  options.job_id = job;
  options.rpc_timeout = 20s;
  return StoreClient::Connect(options);
}

// A ddprund on the cluster's store, on a port of its own choosing; "127.0.0.1:PORT" once it
// listens, else "" (its stderr says why).
struct DaemonOnEtcd {
  explicit DaemonOnEtcd(const EtcdCluster& cluster)
      : process({kDdprund, "--port", "0", "--store", "etcd", "--etcd-endpoints",
                 cluster.EndpointList()}) {
    auto line = process.WaitForStdoutLine(
        [](const std::string& l) { return l.rfind("ddprund listening on ", 0) == 0; });
    if (line) address = line->substr(std::string("ddprund listening on ").size());
  }
  ChildProcess process;
  std::string address;
};

TEST_CASE(
    "every ddprund on one etcd cluster serves the same store keys, and kill -9 of one "
    "loses none") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(3);
  DaemonOnEtcd a(cluster);
  DaemonOnEtcd b(cluster);
  REQUIRE_FALSE(a.address.empty());
  REQUIRE_FALSE(b.address.empty());
  auto on_a = ClientOf(a.address, "job-1");
  auto on_b = ClientOf(b.address, "job-1");

  REQUIRE(on_a->Set("nccl_id", "id-bytes").ok());
  CHECK(on_b->Get("nccl_id").value() == "id-bytes");
  CHECK(ClientOf(b.address, "job-2")->Get("nccl_id").status().code() == StatusCode::kNotFound);

  // A wait at b, released by a set at a.
  auto waited = std::async(std::launch::async, [&] { return on_b->Wait({"rank1"}, 30s); });
  REQUIRE(on_a->Set("rank1", "ready").ok());
  CHECK(waited.get().ok());

  // Adds and compare_sets through both daemons at once lose nothing. (Catch2's assertions are
  // for the test's own thread: each side returns its first failure.)
  auto twenty_adds = [](StoreClient& client) {
    for (int i = 0; i < 20; ++i) {
      Status added = client.Add("arrived", 1).status();
      if (!added.ok()) return added;
    }
    return Status();
  };
  auto adds_a = std::async(std::launch::async, [&] { return twenty_adds(*on_a); });
  const Status adds_b = twenty_adds(*on_b);
  const Status adds_a_status = adds_a.get();
  INFO("through a: " << adds_a_status.ToString() << "; through b: " << adds_b.ToString());
  REQUIRE((adds_a_status.ok() && adds_b.ok()));
  CHECK(on_a->Get("arrived").value() == "40");
  CHECK(on_b->CompareSet("leader", "", "b").value().swapped);
  auto second = on_a->CompareSet("leader", "", "a");
  CHECK_FALSE(second.value().swapped);
  CHECK(second.value().value == "b");
  CHECK(on_a->Delete("rank1").value());
  CHECK(on_b->Get("rank1").status().code() == StatusCode::kNotFound);

  // a's host is gone: its keys are not.
  a.process.Signal(SIGKILL);
  REQUIRE(a.process.Wait());
  CHECK(on_b->Get("nccl_id").value() == "id-bytes");
  CHECK(on_b->Get("arrived").value() == "40");
  // ... and a daemon started afterwards serves them too.
  DaemonOnEtcd c(cluster);
  REQUIRE_FALSE(c.address.empty());
  CHECK(ClientOf(c.address, "job-1")->Get("leader").value() == "b");
}

TEST_CASE("a store client that lists every daemon moves on when its daemon is killed") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  DaemonOnEtcd a(cluster);
  DaemonOnEtcd b(cluster);
  REQUIRE_FALSE(a.address.empty());
  REQUIRE_FALSE(b.address.empty());
  // As DDPRUN_STORE_ADDR holds it for a worker of a job on several daemons.
  auto worker = ClientOf(a.address + "," + b.address, "job-1");
  REQUIRE(worker->Set("k", "1").ok());
  CHECK(ClientOf(a.address, "job-1")->Get("k").value() == "1");
  a.process.Signal(SIGKILL);
  REQUIRE(a.process.Wait());
  CHECK(worker->Get("k").value() == "1");
  CHECK(worker->Add("n", 2).value() == 2);
  CHECK(ClientOf(b.address, "job-1")->Get("n").value() == "2");
  // With none left, the error names every listed daemon.
  b.process.Signal(SIGKILL);
  REQUIRE(b.process.Wait());
  auto none = worker->Get("k");
  CHECK(none.status().code() == StatusCode::kUnavailable);
  CHECK(none.status().message().find(a.address + "," + b.address) != std::string::npos);
}

TEST_CASE("the store keys of daemons on etcd survive the loss of one of three members") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(3);
  DaemonOnEtcd a(cluster);
  REQUIRE_FALSE(a.address.empty());
  auto client = ClientOf(a.address, "job-1");
  REQUIRE(client->Set("before", "1").ok());
  cluster.Kill(0);  // the member every daemon's client tries first
  CHECK(client->Get("before").value() == "1");
  CHECK(client->Set("after", "2").ok());
  CHECK(client->Add("count", 5).value() == 5);
}

TEST_CASE("ddprund --store=etcd does not start when no etcd member answers") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  // An address of this test's own loopback range where no member was started (so nothing
  // listens): the cluster of one below is started and killed to learn it.
  std::string endpoint;
  {
    EtcdCluster cluster(1);
    endpoint = cluster.ClientEndpoint(0);
  }
  auto daemon = Run({kDdprund, "--port", "0", "--store", "etcd", "--etcd-endpoints", endpoint});
  CHECK(daemon.code() == 1);
  CHECK(daemon.err.find("ddprund: error: etcd: ") != std::string::npos);
  CHECK(daemon.err.find("start the members first") != std::string::npos);
  CHECK(daemon.out.find("listening") == std::string::npos);
}

TEST_CASE("a rendezvous server over the etcd store answers store calls from its own threads") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto etcd_client = cluster.OpenClient();
  etcd::EtcdJobStore store(*etcd_client, "/ddprun/");
  RendezvousServerOptions options;
  options.store = &store;
  auto server = RendezvousServer::Start(options);
  REQUIRE(server.ok());
  CHECK(&server.value()->store() == &store);
  auto client = ClientOf(server.value()->address(), "job-1");

  // Many waits pending at once on a few completion threads: each is answered when its key is
  // set, and none holds up the sets that release the others.
  constexpr int kWaits = 40;
  std::vector<std::future<Status>> waits;
  for (int i = 0; i < kWaits; ++i) {
    waits.push_back(std::async(std::launch::async, [&, i] {
      return ClientOf(server.value()->address(), "job-1")->Wait({"k" + std::to_string(i)}, 60s);
    }));
  }
  for (int i = 0; i < kWaits; ++i) REQUIRE(client->Set("k" + std::to_string(i), "v").ok());
  for (auto& wait : waits) CHECK(wait.get().ok());
  CHECK(client->Wait({"absent"}, 200ms).code() == StatusCode::kDeadlineExceeded);
  CHECK(client->Set("", "v").code() == StatusCode::kInvalidArgument);
  CHECK(store.pending_waiters() == 0);
}

}  // namespace
}  // namespace ddprun::testing
