// JobRegistry: many jobs behind one lock; settings agreed by every node; ended jobs forgotten.
#include "job_registry.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

namespace {

RendezvousSettings Nodes(int min_nodes, int max_nodes) {
  RendezvousSettings settings;
  settings.min_nodes = min_nodes;
  settings.max_nodes = max_nodes;
  return settings;
}

NodeDescription Node(const std::string& id) { return {id, "host-" + id, 1, 29500}; }

}  // namespace

TEST_CASE("a node asking for other --nnodes than its job's is refused and changes nothing") {
  JobRegistry registry;
  std::vector<RoutedEvent> events;
  const RendezvousTime now{};
  REQUIRE(registry.Join("j", Nodes(2, 2), Node("a"), std::nullopt, now, events).ok());
  Status refused = registry.Join("j", Nodes(3, 3), Node("b"), std::nullopt, now, events);
  CHECK(refused.code() == StatusCode::kInvalidArgument);
  CHECK(refused.message().find("give every node the same --nnodes") != std::string::npos);
  auto jobs = registry.Snapshot("j", now);
  REQUIRE(jobs.ok());
  CHECK(jobs->front().nodes.size() == 1);
  CHECK(registry.Snapshot("other", now).status().code() == StatusCode::kNotFound);
}

TEST_CASE("an ended job is kept for a while, then forgotten, and its id can be used again") {
  JobRegistry registry;
  std::vector<RoutedEvent> events;
  RendezvousTime now{};
  REQUIRE(registry.Join("j", Nodes(1, 1), Node("a"), std::nullopt, now, events).ok());
  registry.Succeeded("j", "a", 0, now, events);
  CHECK(registry.AllEnded());
  // A late node learns the job is over.
  now += 1min;
  CHECK(registry.Join("j", Nodes(1, 1), Node("late"), std::nullopt, now, events).code() ==
        StatusCode::kFailedPrecondition);
  REQUIRE(registry.NextDeadline().has_value());
  CHECK(*registry.NextDeadline() == RendezvousTime{} + JobRegistry::kEndedJobRetention);
  now = *registry.NextDeadline();
  std::vector<std::string> forgotten;
  registry.Tick(now, events, &forgotten);
  CHECK(forgotten == std::vector<std::string>{"j"});
  CHECK(registry.Snapshot("j", now).status().code() == StatusCode::kNotFound);
  CHECK(registry.Join("j", Nodes(1, 1), Node("again"), std::nullopt, now, events).ok());
}

TEST_CASE("a join over the server's limits is refused and leaves the server as it was") {
  JobLimits limits;
  limits.max_jobs = 2;
  limits.max_nodes_per_job = 8;
  limits.max_workers_per_node = 16;
  limits.waiting_nodes_beyond_max = 1;
  limits.max_id_bytes = 10;
  JobRegistry registry(limits);
  std::vector<RoutedEvent> events;
  RendezvousTime now{};
  const auto join = [&](const std::string& job, RendezvousSettings settings, NodeDescription node) {
    return registry.Join(job, settings, node, std::nullopt, now, events);
  };
  CHECK(join("j", Nodes(1, 9), Node("a")).message() ==
        "a job of up to 9 nodes is over the server's limit of 8");
  NodeDescription many = Node("a");
  many.nproc = 17;
  CHECK(join("j", Nodes(1, 1), many).message() ==
        "node host-a runs 17 workers; a node runs at most 16");
  CHECK(join("a-long-job-id", Nodes(1, 1), Node("a")).message() ==
        "a job id of 13 bytes is over the limit of 10");
  CHECK(join("j", Nodes(1, 1), Node("a-long-node")).message() ==
        "a node id of 11 bytes is over the limit of 10");
  RendezvousSettings negative = Nodes(1, 1);
  negative.join_timeout = -1ms;
  CHECK(join("j", negative, Node("a")).message() == "rendezvous timeouts must be positive");
  RendezvousSettings forever = Nodes(1, 1);
  forever.heartbeat_timeout = std::chrono::hours(24 * 365);
  CHECK(join("j", forever, Node("a")).message().find("is over the limit of 604800 s") !=
        std::string::npos);
  CHECK(registry.Snapshot("", now).value().empty());

  // A job of at most 2 nodes holds one more, waiting for room; the next is refused.
  REQUIRE(join("j", Nodes(2, 2), Node("a")).ok());
  REQUIRE(join("j", Nodes(2, 2), Node("b")).ok());
  REQUIRE(join("j", Nodes(2, 2), Node("c")).ok());
  Status full = join("j", Nodes(2, 2), Node("d"));
  CHECK(full.code() == StatusCode::kResourceExhausted);
  CHECK(full.message() ==
        "job 'j' already holds 3 nodes (its 2 and 1 waiting for room); node host-d is refused");
  CHECK(join("j", Nodes(2, 2), Node("a")).ok());  // a node it holds may join again

  // Two jobs that have not ended fill the server; an ended one makes room, and is forgotten.
  REQUIRE(join("k", Nodes(1, 1), Node("a")).ok());
  CHECK(join("l", Nodes(1, 1), Node("a")).code() == StatusCode::kResourceExhausted);
  registry.Succeeded("k", "a", 0, now, events);
  REQUIRE(join("l", Nodes(1, 1), Node("a")).ok());
  std::vector<std::string> forgotten;
  registry.Tick(now, events, &forgotten);
  CHECK(forgotten == std::vector<std::string>{"k"});
  CHECK(registry.Snapshot("k", now).status().code() == StatusCode::kNotFound);
}
