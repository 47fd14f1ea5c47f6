// ReadSlurmStep and the command line under Slurm: the variables of real steps written out, and
// what srun's users get wrong.
#include "slurm_step.h"

#include <catch2/catch.hpp>
#include <cstdlib>

#include "command_line.h"

using namespace ddprun;

namespace {

// The variables srun sets for the task on node `node_id` of a 4-node step with 4 GPUs a node.
EnvironmentMap FourNodeStep(int node_id) {
  return {{"SLURM_JOB_ID", "1234"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_JOB_NUM_NODES", "4"},
          {"SLURM_STEP_NUM_NODES", "4"},
          {"SLURM_NNODES", "4"},
          {"SLURM_JOB_NODELIST", "gpu[07-10]"},
          {"SLURM_STEP_NODELIST", "gpu[07-10]"},
          {"SLURM_NODEID", std::to_string(node_id)},
          {"SLURM_STEP_TASKS_PER_NODE", "1(x4)"},
          {"SLURM_TASKS_PER_NODE", "1(x4)"},
          {"SLURM_NTASKS", "4"},
          {"SLURM_PROCID", std::to_string(node_id)},
          {"SLURM_LOCALID", "0"},
          {"SLURM_GPUS_ON_NODE", "4"},
          {"SLURM_LAUNCH_NODE_IPADDR", "10.0.0.250"}};  // the login node: never the endpoint
}

int NoGpus() { return 0; }

// Sets the variables of `step` for one scope (the command line reads the process's).
struct ScopedStep {
  explicit ScopedStep(const EnvironmentMap& step) : step_(step) {
    for (const auto& [name, value] : step_) ::setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedStep() {
    for (const auto& [name, value] : step_) ::unsetenv(name.c_str());
  }
  EnvironmentMap step_;
};

std::string UsageErrorOf(const std::vector<std::string>& args) {
  auto parsed = ParseCommandLine(args);
  REQUIRE(std::holds_alternative<UsageError>(parsed));
  return std::get<UsageError>(parsed).message;
}

}  // namespace

TEST_CASE("outside a Slurm step nothing is derived, and no GPU is counted") {
  int counted = 0;
  auto step = ReadSlurmStep({{"SLURM_JOB_ID", "5"}},  // an allocation, not a step
                            [&counted] { return ++counted; });
  REQUIRE(step.ok());
  CHECK_FALSE(step->has_value());
  CHECK(counted == 0);
}

TEST_CASE("the four nodes of a Slurm step get node ranks 0..3, one endpoint and one run id") {
  for (int node = 0; node < 4; ++node) {
    INFO("node " << node);
    auto step = ReadSlurmStep(FourNodeStep(node), NoGpus);
    REQUIRE(step.ok());
    REQUIRE(step->has_value());
    const SlurmStep& s = **step;
    CHECK(s.ValueOf("--nnodes") == "4");
    CHECK(s.ValueOf("--node_rank") == std::to_string(node));
    CHECK(s.ValueOf("--rdzv_endpoint") == "gpu07:29740");  // the step's first node
    CHECK(s.ValueOf("--rdzv_id") == "slurm-1234.0");
    CHECK(s.ValueOf("--nproc_per_node") == "4");
    CHECK(s.Banner() == "Slurm job 1234, step 0: --nnodes=4 (SLURM_STEP_NUM_NODES) --node_rank=" +
                            std::to_string(node) +
                            " (SLURM_NODEID) --rdzv_endpoint=gpu07:29740 (the first node of "
                            "SLURM_STEP_NODELIST=gpu[07-10]; the step's port) "
                            "--rdzv_id=slurm-1234.0 (SLURM_JOB_ID, "
                            "SLURM_STEP_ID) --nproc_per_node=4 (SLURM_GPUS_ON_NODE)");
    // Through the command line, as `srun ddprun train` sees it.
    ScopedStep scoped(FourNodeStep(node));
    auto parsed = ParseCommandLine({"/bin/true"});
    REQUIRE(std::holds_alternative<LaunchConfig>(parsed));
    const auto& config = std::get<LaunchConfig>(parsed);
    CHECK(config.min_nodes == 4);
    CHECK(config.max_nodes == 4);
    CHECK(config.node_rank == node);
    CHECK(config.node_rank_given);
    CHECK(config.multi_node);
    CHECK(config.rdzv_host == "gpu07");
    CHECK(config.rdzv_port == 29740);  // 29400 + 12340 mod 1000
    CHECK(config.run_id == "slurm-1234.0");
    CHECK(config.nproc_per_node == 4);
    CHECK(config.scheduler == "Slurm job 1234, step 0");
  }
}

namespace {

// The --nproc_per_node a step derives.
std::optional<std::string> NprocOf(const EnvironmentMap& step, int visible_gpus) {
  auto read = ReadSlurmStep(step, [visible_gpus] { return visible_gpus; });
  REQUIRE(read.ok());
  REQUIRE(read->has_value());
  return (*read)->ValueOf("--nproc_per_node");
}

}  // namespace

TEST_CASE("GPUs per node come from SLURM_GPUS_ON_NODE, then SLURM_GPUS_PER_NODE, then the node") {
  auto step = FourNodeStep(0);
  step.erase("SLURM_GPUS_ON_NODE");
  CHECK_FALSE(NprocOf(step, 0));
  CHECK(NprocOf(step, 2) == "gpu");
  step["SLURM_GPUS_PER_NODE"] = "a100:2";
  CHECK(NprocOf(step, 0) == "2");
  step["SLURM_GPUS_PER_NODE"] = "a100:2,v100:1";
  CHECK(NprocOf(step, 0) == "3");
  step["SLURM_GPUS_PER_NODE"] = "a100:4(S:0-1)";
  CHECK(NprocOf(step, 0) == "4");
  step["SLURM_GPUS_PER_NODE"] = "8";
  CHECK(NprocOf(step, 0) == "8");
}

TEST_CASE("a step of several tasks a node, or one whose variables disagree, is refused") {
  auto many = FourNodeStep(0);
  many["SLURM_STEP_TASKS_PER_NODE"] = "4(x4)";
  auto refused = ReadSlurmStep(many, NoGpus);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("runs 4 tasks on a node") != std::string::npos);
  CHECK(refused.status().message().find("srun --ntasks-per-node=1") != std::string::npos);
  auto beyond = FourNodeStep(0);
  beyond["SLURM_NODEID"] = "4";
  CHECK(ReadSlurmStep(beyond, NoGpus).status().message().find("SLURM_NODEID=4 in a step of 4") !=
        std::string::npos);
  auto short_list = FourNodeStep(0);
  short_list["SLURM_STEP_NODELIST"] = "gpu[07-09]";
  CHECK(ReadSlurmStep(short_list, NoGpus).status().message().find("names 3 node(s)") !=
        std::string::npos);
  auto bad_list = FourNodeStep(0);
  bad_list["SLURM_STEP_NODELIST"] = "gpu[07-";
  CHECK(ReadSlurmStep(bad_list, NoGpus).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("under Slurm, flags win, but ones that contradict the step are usage errors") {
  ScopedStep scoped(FourNodeStep(2));
  auto parsed = ParseCommandLine(
      {"--rdzv_endpoint=10.1.1.1:29500", "--nproc_per_node=2", "--rdzv_id=mine", "/bin/true"});
  REQUIRE(std::holds_alternative<LaunchConfig>(parsed));
  const auto& config = std::get<LaunchConfig>(parsed);
  CHECK(config.rdzv_host == "10.1.1.1");
  CHECK(config.nproc_per_node == 2);
  CHECK(config.run_id == "mine");
  CHECK(config.node_rank == 2);  // not given: the step's
  CHECK(UsageErrorOf({"--nnodes=2", "/bin/true"}) ==
        "--nnodes=2 contradicts the Slurm step (--nnodes=4 from SLURM_STEP_NUM_NODES); leave the "
        "flag out under srun");
  CHECK(UsageErrorOf({"--node_rank=0", "/bin/true"}).find("--node_rank=0 contradicts") == 0);
  // --standalone: one node, whatever the step says (its GPUs still count).
  auto standalone = ParseCommandLine({"--standalone", "/bin/true"});
  REQUIRE(std::holds_alternative<LaunchConfig>(standalone));
  CHECK_FALSE(std::get<LaunchConfig>(standalone).multi_node);
  CHECK(std::get<LaunchConfig>(standalone).nproc_per_node == 4);
}

TEST_CASE("a Slurm id with white space or a control character or a slash is refused") {
  for (const char* id : {"12 34", "12\n34", "../x"}) {
    EnvironmentMap step = FourNodeStep(0);
    step["SLURM_JOB_ID"] = id;
    auto read = ReadSlurmStep(step, NoGpus);
    REQUIRE(!read.ok());
    CHECK(read.status().message().find("is not a Slurm id") != std::string::npos);
    CHECK(read.status().message().find('\n') == std::string::npos);
  }
}
