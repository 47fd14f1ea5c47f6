// The command line given exactly the environment Kubeflow's operators write into a training pod
// (training-operator v1.9 PyTorchJob: pkg/controller.v1/pytorch/{envvar,master,elastic}.go;
// Trainer v2.3 TrainJob: pkg/runtime/framework/plugins/torch/torch.go): the flags torchrun would
// take from them, and the rendezvous torchrun would form.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>

#include "command_line.h"

using namespace ddprun;

namespace {

using Environment = std::map<std::string, std::string>;

// Sets the variables for one scope.
struct ScopedEnvironment {
  explicit ScopedEnvironment(Environment variables) : variables_(std::move(variables)) {
    for (const auto& [name, value] : variables_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnvironment() {
    for (const auto& [name, value] : variables_) ::unsetenv(name.c_str());
  }
  Environment variables_;
};

LaunchConfig Parsed(const Environment& environment) {
  ScopedEnvironment scoped(environment);
  auto parsed = ParseCommandLine({"/bin/true"});
  if (auto* error = std::get_if<UsageError>(&parsed)) FAIL("usage error: " << error->message);
  return std::get<LaunchConfig>(parsed);
}

// PyTorchJob "demo": one Master and one Worker replica, port 23456 (pytorchjob-port), no
// elasticPolicy; pod `node_rank` (0: demo-master-0, 1: demo-worker-0).
Environment PyTorchJob(int node_rank, const std::string& nproc_per_node) {
  const int per_node = nproc_per_node == "auto" ? 1 : std::stoi(nproc_per_node);
  return {{"PYTHONUNBUFFERED", "1"},
          {"MASTER_PORT", "23456"},
          {"PET_MASTER_PORT", "23456"},
          {"MASTER_ADDR", "demo-master-0"},
          {"PET_MASTER_ADDR", "demo-master-0"},
          {"WORLD_SIZE", std::to_string(2 * per_node)},
          {"RANK", std::to_string(node_rank)},
          {"PET_NODE_RANK", std::to_string(node_rank)},
          {"PET_NPROC_PER_NODE", nproc_per_node},
          {"PET_NNODES", "2"}};
}

}  // namespace

TEST_CASE("a PyTorchJob pod meets the others at MASTER_ADDR:MASTER_PORT with its node rank") {
  for (int node_rank = 0; node_rank < 2; ++node_rank) {
    INFO("pod " << node_rank);
    const LaunchConfig config = Parsed(PyTorchJob(node_rank, "2"));
    CHECK(config.multi_node);
    CHECK(config.min_nodes == 2);
    CHECK(config.max_nodes == 2);
    CHECK(config.nproc_per_node == 2);
    CHECK(config.node_rank == node_rank);
    CHECK(config.node_rank_given);  // the rendezvous gives it that group rank
    CHECK(config.rdzv_host == "demo-master-0");
    CHECK(config.rdzv_port == 23456);
    CHECK(config.rendezvous_at_master);
    CHECK_FALSE(config.master_port);  // the workers' MASTER_PORT is reserved apart
    CHECK(config.run_id == "none");   // torchrun's default: every pod the same
  }
  // nprocPerNode unset: the operator's default is "auto", as torchrun reads it.
  CHECK(Parsed(PyTorchJob(0, "auto")).nproc_per_node >= 1);
}

TEST_CASE("an elastic PyTorchJob pod meets at PET_RDZV_ENDPOINT, elastic from 1 to 3 nodes") {
  const LaunchConfig config = Parsed({{"PYTHONUNBUFFERED", "1"},
                                      {"PET_NPROC_PER_NODE", "auto"},
                                      {"PET_RDZV_ENDPOINT", "demo-worker-0:23456"},
                                      {"PET_RDZV_BACKEND", "c10d"},
                                      {"PET_NNODES", "1:3"},
                                      {"PET_MAX_RESTARTS", "3"}});
  CHECK(config.multi_node);
  CHECK(config.min_nodes == 1);
  CHECK(config.max_nodes == 3);
  CHECK(config.rdzv_host == "demo-worker-0");
  CHECK(config.rdzv_port == 23456);
  CHECK_FALSE(config.rendezvous_at_master);
  CHECK_FALSE(config.node_rank_given);  // ranks follow the joins, as under c10d
  CHECK(config.max_restarts == 3);
  CHECK(config.run_id == "none");
}

TEST_CASE("a TrainJob node meets at PET_MASTER_ADDR:PET_MASTER_PORT with its node rank") {
  for (int node_rank = 0; node_rank < 2; ++node_rank) {
    INFO("node " << node_rank);
    const LaunchConfig config = Parsed({{"PET_NNODES", "2"},
                                        {"PET_NPROC_PER_NODE", "4"},
                                        {"PET_NODE_RANK", std::to_string(node_rank)},
                                        {"PET_MASTER_ADDR", "tj-node-0-0.tj"},
                                        {"PET_MASTER_PORT", "29500"}});
    CHECK(config.multi_node);
    CHECK(config.max_nodes == 2);
    CHECK(config.nproc_per_node == 4);
    CHECK(config.node_rank == node_rank);
    CHECK(config.node_rank_given);
    CHECK(config.rdzv_host == "tj-node-0-0.tj");
    CHECK(config.rdzv_port == 29500);
  }
}
