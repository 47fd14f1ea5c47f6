// The environment contract is one table: every variable the agent sets is in it, every entry
// is documented in docs/environment.md, and the readers read what the agent writes.
#include "ddprun/base/worker_environment_contract.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "ddprun/agent/worker_environment.h"
#include "support/test_paths.h"

using namespace ddprun;

namespace {

// What BuildWorkerEnvironment adds to an empty environment with every option that adds a
// variable turned on.
EnvironmentMap EverythingTheAgentSets() {
  JobEnvironment job;
  job.run_id = "job";
  job.master_addr = "10.0.0.1";
  job.master_port = 29500;
  job.store_address = "10.0.0.1:29400";
  job.store_token = "token";
  job.store_tls = {"ca.pem", "cert.pem", "key.pem"};
  job.node_interface = "eth0";
  job.virtual_local_rank = true;
  WorkerPlacement placement;
  placement.local_world_size = 2;
  return BuildWorkerEnvironment({}, job, placement, "error.json");
}

std::string Documentation() {
  std::ifstream in(std::string(ddprun::testing::paths::kSourceDir) + "/docs/environment.md");
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("every variable the agent sets is in the contract's table, as the agent's") {
  const EnvironmentMap env = EverythingTheAgentSets();
  REQUIRE(env.size() >= 25);
  for (const auto& [name, value] : env) {
    INFO(name);
    const worker_env::Variable* variable = worker_env::Find(name);
    REQUIRE(variable != nullptr);
    CHECK(variable->written_by == worker_env::Writer::kAgent);
  }
  // And the agent sets every variable the table says it writes.
  for (const worker_env::Variable* variable : worker_env::kAll) {
    INFO(variable->name);
    if (variable->written_by == worker_env::Writer::kAgent) CHECK(env.contains(variable->name));
  }
}

TEST_CASE("every variable of the contract is documented in docs/environment.md") {
  const std::string docs = Documentation();
  for (const worker_env::Variable* variable : worker_env::kAll) {
    INFO(variable->name);
    CHECK(docs.find(std::string("`") + variable->name + "`") != std::string::npos);
  }
}

TEST_CASE("the user's knobs have their documented defaults") {
  const std::string docs = Documentation();
  for (const worker_env::Variable* variable : worker_env::kAll) {
    if (variable->written_by != worker_env::Writer::kUser) continue;
    INFO(variable->name);
    REQUIRE(*variable->default_value != '\0');
    // The row of the variable ends with its default, as `value`.
    const size_t row = docs.find(std::string("| `") + variable->name + "` |");
    REQUIRE(row != std::string::npos);
    const std::string line = docs.substr(row, docs.find('\n', row) - row);
    CHECK(line.find(std::string("`") + variable->default_value + "` |") != std::string::npos);
  }
}
