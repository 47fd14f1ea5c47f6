// JobRegistry: many jobs behind one lock; settings agreed by every node; ended jobs forgotten.
#include "ddprun/rendezvous/job_registry.h"

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
