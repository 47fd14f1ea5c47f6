// A job's store credential (JobRegistry): minted when the job is created, carried by every
// RoundReady, good for that job only, revoked when the job ends; adopted from resuming nodes by a
// server that lost the job.
#include <catch2/catch.hpp>

#include "job_registry.h"

using namespace ddprun;

namespace {

RendezvousSettings Nodes(int count) {
  RendezvousSettings settings;
  settings.min_nodes = count;
  settings.max_nodes = count;
  return settings;
}

NodeDescription Node(const std::string& id) { return {id, "host-" + id, 1, 29500}; }

// Credentials "secret-1", "secret-2", ... in the order jobs are created.
JobRegistry::CredentialMint CountingMint() {
  return
      [count = 0]() mutable -> Result<std::string> { return "secret-" + std::to_string(++count); };
}

// The round a resuming node reports, its workers holding `credential`.
RunningRound ResumingWith(int group_world_size, const std::string& credential) {
  RunningRound running;
  running.group_world_size = group_world_size;
  running.store_credential = credential;
  return running;
}

std::vector<std::string> CredentialsOfRoundsIn(const std::vector<RoutedEvent>& events) {
  std::vector<std::string> credentials;
  for (const RoutedEvent& routed : events) {
    if (routed.event.type == NodeEvent::Type::kRoundReady) {
      credentials.push_back(routed.event.assignment.store_credential);
    }
  }
  return credentials;
}

}  // namespace

TEST_CASE("each job's rounds carry its own credential, good for that job's keys only") {
  JobRegistry registry(JobLimits{}, CountingMint());
  std::vector<RoutedEvent> events;
  const RendezvousTime now{};
  REQUIRE(registry.Join("a", Nodes(2), Node("a0"), std::nullopt, now, events).ok());
  REQUIRE(registry.Join("a", Nodes(2), Node("a1"), std::nullopt, now, events).ok());
  REQUIRE(registry.Join("b", Nodes(1), Node("b0"), std::nullopt, now, events).ok());
  CHECK(CredentialsOfRoundsIn(events) ==
        std::vector<std::string>{"secret-1", "secret-1", "secret-2"});
  CHECK(registry.AcceptsStoreCredential("a", "secret-1"));
  CHECK(registry.AcceptsStoreCredential("b", "secret-2"));
  CHECK_FALSE(registry.AcceptsStoreCredential("b", "secret-1"));  // another job's keys
  CHECK_FALSE(registry.AcceptsStoreCredential("a", "secret-2"));
  CHECK_FALSE(registry.AcceptsStoreCredential("a", ""));
  CHECK_FALSE(registry.AcceptsStoreCredential("unknown", "secret-1"));
}

TEST_CASE("a restart's round carries the same credential, and the job's end revokes it") {
  JobRegistry registry(JobLimits{}, CountingMint());
  std::vector<RoutedEvent> events;
  const RendezvousTime now{};
  RendezvousSettings settings = Nodes(1);
  settings.max_restarts = 1;
  REQUIRE(registry.Join("j", settings, Node("n"), std::nullopt, now, events).ok());
  registry.WorkerFailed("j", "n", 0, WorkerFailure{}, 1, now, events);
  REQUIRE(registry.Join("j", settings, Node("n"), std::nullopt, now, events).ok());
  CHECK(CredentialsOfRoundsIn(events) == std::vector<std::string>{"secret-1", "secret-1"});
  CHECK(registry.AcceptsStoreCredential("j", "secret-1"));
  registry.Succeeded("j", "n", 1, now, events);
  CHECK(registry.AllEnded());
  CHECK_FALSE(registry.AcceptsStoreCredential("j", "secret-1"));
}

TEST_CASE("a server that lost a job adopts the credential its resuming nodes' workers hold") {
  JobRegistry registry(JobLimits{}, CountingMint());
  std::vector<RoutedEvent> events;
  const RendezvousTime now{};
  REQUIRE(
      registry.Join("j", Nodes(1), Node("n"), ResumingWith(1, "held-by-the-workers"), now, events)
          .ok());
  CHECK(registry.AcceptsStoreCredential("j", "held-by-the-workers"));
  CHECK_FALSE(registry.AcceptsStoreCredential("j", "secret-1"));
}

TEST_CASE("once handed out, a job's credential is not replaced by a resuming node's") {
  JobRegistry registry(JobLimits{}, CountingMint());
  std::vector<RoutedEvent> events;
  const RendezvousTime now{};
  REQUIRE(registry.Join("j", Nodes(2), Node("a"), std::nullopt, now, events).ok());
  REQUIRE(registry.Join("j", Nodes(2), Node("b"), std::nullopt, now, events).ok());
  REQUIRE(
      registry.Join("j", Nodes(2), Node("a"), ResumingWith(2, "chosen-by-the-caller"), now, events)
          .ok());
  CHECK(registry.AcceptsStoreCredential("j", "secret-1"));
  CHECK_FALSE(registry.AcceptsStoreCredential("j", "chosen-by-the-caller"));
}

TEST_CASE("without a mint (a server with no token) jobs have no credential") {
  JobRegistry registry;
  std::vector<RoutedEvent> events;
  REQUIRE(registry.Join("j", Nodes(1), Node("n"), std::nullopt, RendezvousTime{}, events).ok());
  CHECK(CredentialsOfRoundsIn(events) == std::vector<std::string>{""});
  CHECK_FALSE(registry.AcceptsStoreCredential("j", ""));
}

TEST_CASE("a mint that fails refuses the join that creates the job, with its reason") {
  JobRegistry registry(JobLimits{}, []() -> Result<std::string> {
    return ErrnoError("getrandom for a job's store credential", ENOSYS);
  });
  std::vector<RoutedEvent> events;
  Status refused = registry.Join("j", Nodes(1), Node("n"), std::nullopt, RendezvousTime{}, events);
  CHECK_FALSE(refused.ok());
  CHECK(refused.message().find("getrandom") != std::string::npos);
  CHECK(CredentialsOfRoundsIn(events).empty());
}
