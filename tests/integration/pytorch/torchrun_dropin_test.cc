// Unmodified PyTorch scripts, the kind people launch with torchrun, under the real ddprun on one
// node: training with DDP and gloo, -m, --no_python, --nproc_per_node=auto, restarts, errors
// recorded by @record, and MASTER_PORT for many jobs at once. Real torch, real processes.
#include <sched.h>

#include <catch2/catch.hpp>
#include <set>

#include "integration/launcher/launcher_test_support.h"
#include "pytorch_support.h"

using namespace ddprun::testing;

namespace {

// ddprun --standalone --nproc_per_node=2 with PyTorch's interpreter first on PATH.
RunResult RunStandalone(std::vector<std::string> args,
                        std::map<std::string, std::string> extra_env = {}) {
  args.insert(args.begin(), {"--standalone", "--nproc_per_node=2"});
  auto env = PytorchEnv();
  env.insert(extra_env.begin(), extra_env.end());
  return Run(Ddprun(args), env, 180s);
}

}  // namespace

TEST_CASE("an unmodified PyTorch DDP script trains under ddprun and rank 0's torch.save loads",
          "[ddprun]") {
  if (!HavePytorch()) return;
  ScratchDir dir;
  auto result = RunStandalone({Script("ddp_train.py"), "--epochs", "2", "--out", dir / "model.pt"});
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  const auto lines = RankLines(result.out, 0);
  CHECK(std::count_if(lines.begin(), lines.end(), [](const std::string& line) {
          return line.rfind("trained world=2 epochs=2 ", 0) == 0;
        }) == 1);
  auto loaded = Run({PythonWithTorch(), "-c",
                     "import sys, torch; state = torch.load(sys.argv[1]); "
                     "print(sorted(state), tuple(state['0.weight'].shape))",
                     dir / "model.pt"});
  INFO(loaded.err);
  CHECK(loaded.out == "['0.bias', '0.weight', '2.bias', '2.weight'] (50, 10)\n");
}

TEST_CASE("a module runs with -m package.module, as under torchrun", "[ddprun]") {
  if (!HavePytorch()) return;
  auto result = RunStandalone({"-m", "ddp_package.train_module", "--epochs", "1"},
                              {{"PYTHONPATH", kPytorchScripts}});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.out, "[rank0]: trained world=2 epochs=1 ") == 1);
}

TEST_CASE("with --no_python the program is executed as given: the interpreter and its script",
          "[ddprun]") {
  if (!HavePytorch()) return;
  auto result =
      RunStandalone({"--no_python", PythonWithTorch(), Script("ddp_train.py"), "--epochs", "1"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.out, "[rank0]: trained world=2 epochs=1 ") == 1);
}

TEST_CASE("with --nproc_per_node=auto and no GPU, a script runs once per CPU it may use",
          "[ddprun][start_agnostic]") {
  if (!HavePytorch()) return;
  // Two of the CPUs this test may use (one where there is only one): the test's size is bounded.
  cpu_set_t allowed;
  REQUIRE(::sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
  std::string cpus;
  int expected = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && expected < 2; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    cpus += (cpus.empty() ? "" : ",") + std::to_string(cpu);
    ++expected;
  }
  auto env = PytorchEnv();
  env["CUDA_VISIBLE_DEVICES"] = "";
  auto result = Run({"/usr/bin/taskset", "-c", cpus, kDdprun, "--standalone",
                     "--nproc_per_node=auto", Script("ddp_train.py"), "--epochs", "1"},
                    env, 180s);
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.out, "[rank0]: trained world=" + std::to_string(expected) + " ") == 1);
}

TEST_CASE("a script that fails once, reading TORCHELASTIC_RESTART_COUNT, is restarted and succeeds",
          "[ddprun]") {
  if (!HavePytorch()) return;
  auto result =
      RunStandalone({"--max_restarts=1", Script("ddp_train.py"), "--epochs", "1", "--fail-once"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = RankLines(result.out, rank);
    CHECK(std::count(lines.begin(), lines.end(), "restart=0") == 1);
    CHECK(std::count(lines.begin(), lines.end(), "restart=1") == 1);
  }
  CHECK(Count(result.out, "[rank0]: trained world=2 ") == 1);
}

TEST_CASE("an exception under @record is in the failure report, and ddprun exits with its code",
          "[ddprun][torch_version]") {
  if (!HavePytorch()) return;
  auto result = RunStandalone({Script("raises_with_record.py")});
  INFO(result.out << result.err);
  CHECK(result.code() == 1);  // Python's exit status for an uncaught exception
  const std::string report = result.out + result.err;
  CHECK_THAT(report, Catch::Contains("Root cause (first observed failure):"));
  CHECK_THAT(report, Catch::Contains("rank       : 1 (local_rank 1)"));
  CHECK_THAT(report, Catch::Contains(
                         "error      : ValueError: shard 1 is missing: no file data/shard-1.bin"));
  // The traceback from the error file, frame by frame.
  CHECK_THAT(report, Catch::Contains("in load_shard"));
  CHECK_THAT(report, Catch::Contains("traceback  :"));

  auto exits = RunStandalone({Script("raises_with_record.py"), "--exit", "3"});
  INFO(exits.out << exits.err);
  CHECK(exits.code() == 3);
}

TEST_CASE("twenty jobs started at once on one host each get their own MASTER_PORT",
          "[ddprun][start_agnostic][alone]") {
  if (!HavePytorch()) return;
  // One worker a job: each job's ddprun serves PyTorch's store on a MASTER_PORT of its own,
  // bound once for the run, and twenty interpreters importing torch at once load the cores
  // enough (with two a job the test took a minute, and slowed every test beside it).
  std::vector<std::unique_ptr<ChildProcess>> jobs;
  for (int i = 0; i < 20; ++i) {
    jobs.push_back(std::make_unique<ChildProcess>(
        Ddprun({"--standalone", "--nproc_per_node=1", Script("rendezvous_only.py")}),
        PytorchEnv()));
  }
  std::set<std::string> ports;
  for (auto& job : jobs) {
    auto exit = job->Wait(300s);
    INFO(job->stdout_text() << job->stderr_text());
    REQUIRE(exit.has_value());
    CHECK(exit->exit_code == 0);
    for (const auto& line : RankLines(job->stdout_text(), 0)) {
      const size_t at = line.find(" port=");
      if (at != std::string::npos)
        ports.insert(line.substr(at + 6, line.find(' ', at + 1) - at - 6));
    }
  }
  CHECK(ports.size() == 20);
}

TEST_CASE("a restarted round forms its PyTorch group again while the old connections linger",
          "[ddprun][start_agnostic]") {
  if (!HavePytorch()) return;
  // The first attempt opened the TCPStore's connections and closed them: they sit in TIME_WAIT
  // when the second attempt's ranks meet at MASTER_PORT again (in the store ddprun serves,
  // emptied for them; on several nodes rank 0 binds it again).
  auto result =
      RunStandalone({"--max_restarts=1", Script("rendezvous_only.py"), "--fail-first-attempt"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  const auto lines = RankLines(result.out, 0);
  REQUIRE(lines.size() >= 2);
  CHECK_THAT(lines.front(), Catch::Contains("world=2") && Catch::EndsWith("restart=0"));
  CHECK_THAT(lines.back(), Catch::Contains("world=2") && Catch::EndsWith("restart=1"));
}
