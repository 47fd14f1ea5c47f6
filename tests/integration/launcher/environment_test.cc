// What each worker sees: the environment contract, its arguments, the store.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

TEST_CASE("every rank gets torchrun's variables with torchrun's meaning, plus ddprun's own") {
  ScratchDir logs;
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=3", "--max_restarts=2", "--role=trainer",
                  "--run_id=envtest", "--log_dir=" + logs.path(), kTestWorker, "env"}),
          {{"OMP_NUM_THREADS", "\x01"}});
  REQUIRE(result.code() == 0);
  std::set<std::string> error_files, ports, stores;
  for (int rank = 0; rank < 3; ++rank) {
    auto vars = RankVariables(result.out, rank);
    CHECK(vars["RANK"] == std::to_string(rank));
    CHECK(vars["LOCAL_RANK"] == std::to_string(rank));
    CHECK(vars["ROLE_RANK"] == std::to_string(rank));
    CHECK(vars["GROUP_RANK"] == "0");
    CHECK(vars["WORLD_SIZE"] == "3");
    CHECK(vars["LOCAL_WORLD_SIZE"] == "3");
    CHECK(vars["ROLE_WORLD_SIZE"] == "3");
    CHECK(vars["GROUP_WORLD_SIZE"] == "1");
    CHECK(vars["ROLE_NAME"] == "trainer");
    CHECK(vars["MASTER_ADDR"] == "127.0.0.1");
    CHECK(std::stoi(vars["MASTER_PORT"]) > 0);
    CHECK(vars["TORCHELASTIC_RESTART_COUNT"] == "0");
    CHECK(vars["TORCHELASTIC_MAX_RESTARTS"] == "2");
    CHECK(vars["TORCHELASTIC_RUN_ID"] == "envtest");
    CHECK(vars["TORCHELASTIC_ERROR_FILE"] ==
          logs.path() + "/envtest/attempt_0/" + std::to_string(rank) + "/error.json");
    CHECK(vars["TORCHELASTIC_USE_AGENT_STORE"] == "True");  // one node: ddprun serves the store
    CHECK(vars["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1");
    CHECK(vars["NCCL_ASYNC_ERROR_HANDLING"] == "1");
    CHECK(vars["OMP_NUM_THREADS"] == "1");
    CHECK(vars["DDPRUN_STORE_ADDR"].rfind("127.0.0.1:", 0) == 0);
    CHECK(vars["DDPRUN_TOKEN"].size() == 64);
    CHECK(vars["DDPRUN_JOB_ID"] == "envtest");
    CHECK(vars["DDPRUN_ROUND"] == "0");
    error_files.insert(vars["TORCHELASTIC_ERROR_FILE"]);
    ports.insert(vars["MASTER_PORT"]);
    stores.insert(vars["DDPRUN_STORE_ADDR"]);
  }
  CHECK(error_files.size() == 3);
  CHECK(ports.size() == 1);
  CHECK(stores.size() == 1);
}

TEST_CASE("the user's own OMP_NUM_THREADS and other variables are passed through") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "env"}),
                    {{"OMP_NUM_THREADS", "4"}, {"USER_MARKER", "kept"}});
  REQUIRE(result.code() == 0);
  CHECK(RankVariables(result.out, 1)["OMP_NUM_THREADS"] == "4");
  CHECK(RankVariables(result.out, 1)["USER_MARKER"] == "kept");
}

TEST_CASE("a single worker is not limited to one OpenMP thread") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=1", kTestWorker, "env"}),
                    {{"OMP_NUM_THREADS", "\x01"}});
  REQUIRE(result.code() == 0);
  CHECK(RankVariables(result.out, 0)["OMP_NUM_THREADS"] == "<unset>");
}

TEST_CASE("flags are read from PET_* variables and both spellings, as torchrun does") {
  auto from_env = Run(Ddprun({"--standalone", kTestWorker, "env"}),
                      {{"PET_NPROC_PER_NODE", "2"}, {"PET_MAX_RESTARTS", "3"}});
  REQUIRE(from_env.code() == 0);
  CHECK(RankVariables(from_env.out, 1)["WORLD_SIZE"] == "2");
  CHECK(RankVariables(from_env.out, 1)["TORCHELASTIC_MAX_RESTARTS"] == "3");

  auto dashed = Run(Ddprun({"--standalone", "--nproc-per-node", "2", "--max-restarts", "1",
                            "--run-id", "dashed", kTestWorker, "env"}));
  REQUIRE(dashed.code() == 0);
  CHECK(RankVariables(dashed.out, 1)["WORLD_SIZE"] == "2");
  CHECK(RankVariables(dashed.out, 1)["TORCHELASTIC_MAX_RESTARTS"] == "1");
  CHECK(RankVariables(dashed.out, 1)["TORCHELASTIC_RUN_ID"] == "dashed");
}

TEST_CASE("everything after the program is passed to it verbatim, flags included") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=1", kTestWorker, "args",
                            "--nproc_per_node=7", "two words", "--", "-m"}));
  REQUIRE(result.code() == 0);
  auto lines = RankLines(result.out, 0);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0] == "arg[0]=--nproc_per_node=7");
  CHECK(lines[1] == "arg[1]=two words");
  CHECK(lines[2] == "arg[2]=--");
  CHECK(lines[3] == "arg[3]=-m");
}

TEST_CASE("a .py program runs under PYTHON_EXEC with -u: -m runs a module: --no_python executes") {
  ScratchDir dir;
  const std::string script = dir / "train.py";
  std::ofstream(script) << "#!/bin/sh\necho executed directly \"$@\"\n";
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const std::map<std::string, std::string> echo_python{{"PYTHON_EXEC", "/bin/echo"}};

  auto script_run = Run(Ddprun({"--standalone", script, "--epochs", "1"}), echo_python);
  REQUIRE(script_run.code() == 0);
  CHECK(RankLines(script_run.out, 0) == std::vector<std::string>{"-u " + script + " --epochs 1"});

  auto module_run = Run(Ddprun({"--standalone", "-m", "pkg.train", "--epochs", "1"}), echo_python);
  REQUIRE(module_run.code() == 0);
  CHECK(RankLines(module_run.out, 0) == std::vector<std::string>{"-u -m pkg.train --epochs 1"});

  auto direct = Run(Ddprun({"--standalone", "--no_python", script, "x"}), echo_python);
  REQUIRE(direct.code() == 0);
  CHECK(RankLines(direct.out, 0) == std::vector<std::string>{"executed directly x"});
}

TEST_CASE("workers share the job's key-value store through the embedded rendezvous server") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=4", kTestWorker, "store"}));
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  CHECK(Count(result.out, "FAILED") == 0);
  for (int rank = 0; rank < 4; ++rank) {
    auto lines = RankLines(result.out, rank);
    CHECK(lines.size() == 9);
  }
}

TEST_CASE("the hello_store example runs as a four-worker job") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=4", kHelloStore}));
  REQUIRE(result.code() == 0);
  for (int rank = 0; rank < 4; ++rank) {
    auto lines = RankLines(result.out, rank);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].find("all 4 ranks arrived") != std::string::npos);
  }
}

TEST_CASE(
    "the flag --numa_binding=node binds each worker to its node's CPUs and prefers its memory") {
  // This machine, for real: each worker on the CPUs of the node it is given (without GPUs, the
  // ranks in turn over the nodes), its memory policy "prefer" that node, inherited through exec.
  const std::string show =
      "grep Cpus_allowed_list /proc/self/status; grep -c ' prefer:[0-9]' /proc/self/numa_maps";
  auto result = Run(
      Ddprun({"--nproc_per_node=2", "--numa_binding=node", "--no_python", "/bin/sh", "-c", show}));
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  std::vector<std::string> nodes;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node")) {
    const std::string name = entry.path().filename();
    if (name.rfind("node", 0) == 0 && std::isdigit(static_cast<unsigned char>(name[4]))) {
      nodes.push_back(name);
    }
  }
  std::sort(nodes.begin(), nodes.end(), [](const std::string& a, const std::string& b) {
    return std::stoi(a.substr(4)) < std::stoi(b.substr(4));
  });
  REQUIRE_FALSE(nodes.empty());
  for (int rank = 0; rank < 2; ++rank) {
    const std::string node = nodes[static_cast<size_t>(rank) % nodes.size()];
    std::string cpus = ReadFile("/sys/devices/system/node/" + node + "/cpulist");
    cpus.erase(cpus.find_last_not_of('\n') + 1);
    const auto lines = RankLines(result.out, rank);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0] == "Cpus_allowed_list:\t" + cpus);
    CHECK(std::stoi(lines[1]) > 0);  // mappings with the preferred policy
  }
}

TEST_CASE("an unknown --numa_binding mode is a usage error that starts nothing") {
  auto result = Run(Ddprun({"--numa_binding=cores", "/bin/true"}));
  CHECK(result.code() == 2);
  CHECK(Count(result.err,
              "--numa_binding must be node, socket, exclusive or core-complex, not 'cores'") == 1);
}
