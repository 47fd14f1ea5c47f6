// The jobs' store in etcd (rendezvous/etcd/etcd_job_store.h) over real etcd members: two stores
// on one cluster stand for two daemons serving one job. What one sets the other reads and waits
// for; adds from both at once lose nothing; compare_set answers as PyTorch's does; the limits
// are the in-memory store's; the keys outlive the member that took them.
#include "ddprun/etcd/etcd_job_store.h"

#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "ddprun/rendezvous/key_value_store.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

namespace ddprun::etcd {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;
using testing::SkipTest;

const StoreScopeKey kJob{.job_id = "job/1", .round = 0};

// Two daemons' stores on one cluster, each with a client of its own.
struct TwoDaemons {
  explicit TwoDaemons(int members) : cluster(members) {}
  EtcdCluster cluster;
  std::unique_ptr<EtcdClient> client_a = cluster.OpenClient();
  std::unique_ptr<EtcdClient> client_b = cluster.OpenClient();
  EtcdJobStore a{*client_a, "/ddprun/"};
  EtcdJobStore b{*client_b, "/ddprun/"};
};

TEST_CASE("two daemons' etcd stores serve one job's keys: set, get, wait, delete, drop") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  TwoDaemons daemons(1);
  EtcdJobStore& a = daemons.a;
  EtcdJobStore& b = daemons.b;
  CHECK(a.EtcdKeyOf(kJob, "k") == "/ddprun/jobs/job%2F1/kv/0/k");

  CHECK(b.Get(kJob, "nccl_id").status().code() == StatusCode::kNotFound);
  REQUIRE(a.Set(kJob, "nccl_id", std::string("\0id", 3)).ok());
  CHECK(b.Get(kJob, "nccl_id").value() == std::string("\0id", 3));
  CHECK(b.Get({.job_id = "job/1", .round = 1}, "nccl_id").status().code() == StatusCode::kNotFound);

  // A wait on b for keys a sets later, on another thread.
  std::thread setter([&] {
    REQUIRE(a.Set(kJob, "rank1", "x").ok());
    REQUIRE(a.Set(kJob, "rank2", "y").ok());
  });
  CHECK(b.Wait(kJob, {"nccl_id", "rank1", "rank2"}, 30s).ok());
  setter.join();
  auto missing = b.Wait(kJob, {"rank1", "never"}, 300ms);
  CHECK(missing.code() == StatusCode::kDeadlineExceeded);
  CHECK(missing.message().find("'never'") != std::string::npos);

  CHECK(b.Delete(kJob, "rank1").value());
  CHECK_FALSE(b.Delete(kJob, "rank1").value());
  CHECK(a.Get(kJob, "rank2").ok());  // "rank1" was deleted alone, not as a prefix

  REQUIRE(a.Set({.job_id = "job/10", .round = 0}, "k", "other job").ok());
  REQUIRE(b.DropJob("job/1").ok());
  CHECK(a.Get(kJob, "nccl_id").status().code() == StatusCode::kNotFound);
  CHECK(a.Get({.job_id = "job/10", .round = 0}, "k").value() == "other job");
}

// A wait's completion, for a test to wait on with a bound.
struct Released {
  std::promise<void> promise;
  std::future<void> future = promise.get_future();
  std::function<void()> Callback() {
    return [this] { promise.set_value(); };
  }
  bool Within(std::chrono::milliseconds timeout) {
    return future.wait_for(timeout) == std::future_status::ready;
  }
};

TEST_CASE(
    "an asynchronous wait in etcd is released by another daemon's set, and can be cancelled") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  TwoDaemons daemons(1);
  EtcdJobStore& a = daemons.a;
  EtcdJobStore& b = daemons.b;
  REQUIRE(a.Set(kJob, "already", "1").ok());
  Released at_once;
  REQUIRE(b.WaitAsync(kJob, {"already"}, at_once.Callback()).ok());
  CHECK(at_once.Within(0ms));  // every key was set: released on the calling thread

  Released later;
  auto id = b.WaitAsync(kJob, {"already", "rank0", "rank1"}, later.Callback());
  REQUIRE(id.ok());
  REQUIRE(a.Set(kJob, "rank0", "x").ok());
  CHECK_FALSE(later.Within(100ms));  // rank1 is still missing
  REQUIRE(a.Set(kJob, "rank1", "y").ok());
  CHECK(later.Within(30s));
  CHECK_FALSE(b.CancelWait(*id));  // released already

  Released never;
  auto cancelled = b.WaitAsync(kJob, {"never"}, never.Callback());
  REQUIRE(cancelled.ok());
  CHECK(b.CancelWait(*cancelled));
  REQUIRE(a.Set(kJob, "never", "now").ok());
  REQUIRE(a.Set(kJob, "after", "a later change the watch has seen").ok());
  Released after;
  REQUIRE(b.WaitAsync(kJob, {"after"}, after.Callback()).ok());
  CHECK(after.Within(30s));
  CHECK_FALSE(never.Within(0ms));
}

TEST_CASE("an asynchronous wait in etcd outlives the member its watch used") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  TwoDaemons daemons(3);
  EtcdJobStore& a = daemons.a;
  EtcdJobStore& b = daemons.b;
  Released released;
  REQUIRE(b.WaitAsync(kJob, {"k"}, released.Callback()).ok());
  daemons.cluster.Kill(0);  // the member both clients started on
  REQUIRE(a.Set(kJob, "k", "v").ok());
  CHECK(released.Within(30s));
}

TEST_CASE(
    "a store that watches each job's keys (an agent's server) releases each job's waits, "
    "watches again after a drop, and bounds the jobs it watches") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobStore daemon(*client, "/ddprun/");
  EtcdJobStore agent(*client, "/ddprun/", KeyValueLimits{}, EtcdJobStore::WatchScope::kEachJob);
  const StoreScopeKey other{.job_id = "job/2", .round = 0};
  Released first, second;
  REQUIRE(agent.WaitAsync(kJob, {"k"}, first.Callback()).ok());
  REQUIRE(agent.WaitAsync(other, {"k"}, second.Callback()).ok());
  REQUIRE(daemon.Set(other, "k", "v").ok());
  CHECK(second.Within(30s));
  CHECK_FALSE(first.Within(0ms));
  REQUIRE(daemon.Set(kJob, "k", "v").ok());
  CHECK(first.Within(30s));

  REQUIRE(agent.DropJob("job/2").ok());  // its watch stops, and a later wait starts another
  Released again;
  REQUIRE(agent.WaitAsync(other, {"later"}, again.Callback()).ok());
  REQUIRE(daemon.Set(other, "later", "v").ok());
  CHECK(again.Within(30s));

  // Two watched already; waits of more jobs start a watch each, up to the limit.
  std::vector<std::unique_ptr<Released>> pending;
  for (size_t i = 2; i < EtcdJobStore::kMostWatchedJobs; ++i) {
    pending.push_back(std::make_unique<Released>());
    const StoreScopeKey job{.job_id = "many/" + std::to_string(i), .round = 0};
    REQUIRE(agent.WaitAsync(job, {"k"}, pending.back()->Callback()).ok());
  }
  const StoreScopeKey one_more{.job_id = "one-more", .round = 0};
  auto refused = agent.WaitAsync(one_more, {"k"}, [] {});
  CHECK(refused.status().code() == StatusCode::kResourceExhausted);
  CHECK(refused.status().message().find("watches the keys of 64 jobs") != std::string::npos);
  // A daemon's store watches every job's keys at once: no such bound.
  Released at_daemon;
  REQUIRE(daemon.WaitAsync(one_more, {"k"}, at_daemon.Callback()).ok());
  REQUIRE(agent.Set(one_more, "k", "v").ok());
  CHECK(at_daemon.Within(30s));
}

TEST_CASE("adds from two daemons' etcd stores at once lose nothing") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  TwoDaemons daemons(1);
  EtcdJobStore& a = daemons.a;
  EtcdJobStore& b = daemons.b;
  constexpr int kAddsEach = 50;
  auto adder = [&](EtcdJobStore& store) {
    for (int i = 0; i < kAddsEach; ++i) REQUIRE(store.Add(kJob, "counter", 1).ok());
  };
  std::thread first(adder, std::ref(a));
  std::thread second(adder, std::ref(b));
  first.join();
  second.join();
  CHECK(a.Add(kJob, "counter", 0).value() == 2 * kAddsEach);

  REQUIRE(a.Set(kJob, "text", "not a number").ok());
  CHECK(b.Add(kJob, "text", 1).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("compare_set in etcd answers as PyTorch's store does") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobStore store(*client, "/ddprun/");
  // Absent with a non-empty expectation: nothing set, "" back.
  auto absent = store.CompareSet(kJob, "k", "old", "new").value();
  CHECK_FALSE(absent.swapped);
  CHECK(absent.value.empty());
  CHECK(store.Get(kJob, "k").status().code() == StatusCode::kNotFound);
  // Absent with an empty expectation: set.
  auto created = store.CompareSet(kJob, "k", "", "first").value();
  CHECK(created.swapped);
  CHECK(created.value == "first");
  // Present, expectation wrong: the value as it is.
  auto wrong = store.CompareSet(kJob, "k", "other", "second").value();
  CHECK_FALSE(wrong.swapped);
  CHECK(wrong.value == "first");
  // Present, expectation right.
  auto swapped = store.CompareSet(kJob, "k", "first", "second").value();
  CHECK(swapped.swapped);
  CHECK(store.Get(kJob, "k").value() == "second");
}

TEST_CASE("the etcd store refuses what the in-memory store refuses, with the same messages") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  EtcdJobStore store(*client, "/ddprun/");
  KeyValueStore memory;
  const std::string big((1 << 20) + 1, 'v');
  CHECK(store.Set(kJob, "big", big).message() == memory.Set(kJob, "big", big).message());
  CHECK(store.Set(kJob, "big", big).code() == StatusCode::kResourceExhausted);
  const std::string long_key(1025, 'k');
  CHECK(store.Set(kJob, long_key, "v").message() == memory.Set(kJob, long_key, "v").message());
  CHECK(store.Get(kJob, "").status().code() == StatusCode::kInvalidArgument);
  std::vector<std::string> too_many(1025, "k");
  CHECK(store.Wait(kJob, too_many, 1s).code() == StatusCode::kInvalidArgument);
  // Nothing of it reached etcd.
  CHECK(client->GetPrefix("/ddprun/").value().kvs.empty());
}

TEST_CASE("the etcd store bounds the keys pending waits miss, per job and in all") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  auto client = cluster.OpenClient();
  KeyValueLimits limits;
  limits.max_waited_keys_per_job = 2;
  limits.max_waited_keys = 3;
  EtcdJobStore store(*client, "/ddprun/", limits);
  KeyValueStore memory(limits);
  std::promise<void> released;
  auto first = store.WaitAsync(kJob, {"a", "b"}, [&] { released.set_value(); });
  REQUIRE(first.ok());
  REQUIRE(memory.WaitAsync(kJob, {"a", "b"}, [] {}).ok());
  auto over_job = store.WaitAsync(kJob, {"c"}, [] {});
  CHECK(over_job.status().code() == StatusCode::kResourceExhausted);
  CHECK(over_job.status().message() == memory.WaitAsync(kJob, {"c"}, [] {}).status().message());
  const StoreScopeKey other{.job_id = "other", .round = 0};
  auto x = store.WaitAsync(other, {"x"}, [] {});
  REQUIRE(x.ok());
  CHECK(store.WaitAsync(other, {"y"}, [] {}).status().code() == StatusCode::kResourceExhausted);
  // Keys found and a wait cancelled give their room back.
  REQUIRE(store.Set(kJob, "a", "1").ok());
  REQUIRE(store.Set(kJob, "b", "2").ok());
  REQUIRE(released.get_future().wait_for(30s) == std::future_status::ready);
  REQUIRE(store.WaitAsync(other, {"y"}, [] {}).ok());
  CHECK(store.WaitAsync(kJob, {"c", "d"}, [] {}).status().code() == StatusCode::kResourceExhausted);
  CHECK(store.CancelWait(x.value()));
  CHECK(store.WaitAsync(kJob, {"c", "d"}, [] {}).ok());
}

TEST_CASE("a job's keys in etcd outlive the member that took them") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(3);
  auto client = cluster.OpenClient();
  EtcdJobStore store(*client, "/ddprun/");
  REQUIRE(store.Set(kJob, "nccl_id", "id").ok());
  cluster.Kill(0);
  CHECK(store.Get(kJob, "nccl_id").value() == "id");
  CHECK(store.Add(kJob, "counter", 5).value() == 5);
}

}  // namespace
}  // namespace ddprun::etcd
