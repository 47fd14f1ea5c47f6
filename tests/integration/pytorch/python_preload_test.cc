// --python_preload with real PyTorch under the real ddprun: a worker forked by the preloading
// interpreter sees what a worker started by exec sees (argv and -m, __main__, environment,
// working directory, streams and terminals, process group, parent-death signal, cgroup, limits,
// descriptors), restarts fork again from the one interpreter, random state differs as in fresh
// processes, and a preload that cannot serve leaves normal starts with one warning line.
// [sanitizers]: these run under AddressSanitizer too, as they drive ddprun's own code for warm
// workers (agent/src/python_preload.cc); tests/CMakeLists.txt says why the others do not.
#include <catch2/catch.hpp>
#include <fstream>
#include <set>

#include "integration/launcher/launcher_test_support.h"
#include "pytorch_support.h"
#include "support/terminal_process.h"

using namespace ddprun::testing;

namespace {

const std::string kPreloadScripts = kPytorchScripts + "/preload";

std::string PreloadScript(const std::string& name) { return kPreloadScripts + "/" + name; }

// ddprun --standalone --nproc_per_node=2 ARGS with PyTorch's interpreter first on PATH and the
// preload test modules importable.
RunResult RunJob(std::vector<std::string> args, std::map<std::string, std::string> env = {}) {
  args.insert(args.begin(), {"--standalone", "--nproc_per_node=2"});
  auto full_env = PytorchEnv();
  full_env["PYTHONPATH"] = kPreloadScripts;
  full_env.insert(env.begin(), env.end());
  return Run(Ddprun(args), full_env, 180s);
}

// process_facts.py's lines of one rank, less the variables whose values differ from run to run
// (ports, the token, the temporary log directory's paths).
std::vector<std::string> Facts(const std::string& output, int rank) {
  static const std::set<std::string> kVarying = {
      "env DDPRUN_PROGRESS_FILE", "env DDPRUN_STORE_ADDR",       "env DDPRUN_TOKEN",
      "env MASTER_PORT",          "env TORCHELASTIC_ERROR_FILE", "env DDPRUN_PYTHON_STACKS_DIR",
      "env PYTHONPATH",           "env DDPRUN_PROGRESS_FD"};
  std::vector<std::string> facts;
  for (const auto& line : RankLines(output, rank)) {
    const std::string name = line.substr(0, line.find(':'));
    if (kVarying.count(name) == 0) facts.push_back(line);
  }
  return facts;
}

// The pids process_facts's marker module recorded: one per interpreter that imported it.
std::vector<std::string> MarkerPids(const std::string& file) { return Lines(ReadFile(file)); }

}  // namespace

TEST_CASE("a worker forked by --python_preload sees what a worker started by exec sees",
          "[sanitizers][torch_version]") {
  if (!HavePytorch()) return;
  struct Variant {
    const char* name;
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
  };
  const Variant variant = GENERATE(
      Variant{"a script", {PreloadScript("process_facts.py"), "a", "b c"}, {}},
      Variant{"-m module", {"-m", "process_facts", "--flag"}, {}},
      Variant{"hang detection on (the progress page, the stack hook)",
              {"--hang_timeout=60", PreloadScript("process_facts.py")},
              {}},
      Variant{
          "PYTHONHASHSEED given", {PreloadScript("process_facts.py")}, {{"PYTHONHASHSEED", "7"}}},
      Variant{"--numa_binding=node (CPUs and memory policy)",
              {"--numa_binding=node", PreloadScript("process_facts.py")},
              {}});
  INFO(variant.name);
  std::vector<std::string> fresh_args = {"--run_id=facts"};
  fresh_args.insert(fresh_args.end(), variant.args.begin(), variant.args.end());
  std::vector<std::string> warm_args = {"--run_id=facts", "--python_preload=torch"};
  warm_args.insert(warm_args.end(), variant.args.begin(), variant.args.end());
  const RunResult fresh = RunJob(fresh_args, variant.env);
  const RunResult warm = RunJob(warm_args, variant.env);
  INFO(fresh.out << fresh.err << warm.out << warm.err);
  REQUIRE(fresh.code() == 0);
  REQUIRE(warm.code() == 0);
  CHECK(warm.err.find("warning") == std::string::npos);
  for (int rank = 0; rank < 2; ++rank) {
    const auto fresh_facts = Facts(fresh.out, rank);
    REQUIRE(fresh_facts.size() > 20);
    const auto warm_facts = Facts(warm.out, rank);
    CHECK(warm_facts == fresh_facts);
    // /proc/PID/environ, as ps e and monitors read it: the worker's own, its MASTER_PORT too.
    const std::string rank_text = std::to_string(rank);
    CHECK(std::count(warm_facts.begin(), warm_facts.end(),
                     "proc_environ_rank: [b'LOCAL_RANK=" + rank_text + "', b'RANK=" + rank_text +
                         "']") == 1);
    CHECK(std::count(warm_facts.begin(), warm_facts.end(), "proc_environ_is_os_environ: True") ==
          1);
  }
  // What the comparison stands on.
  const auto facts = Facts(warm.out, 0);
  CHECK(std::count(facts.begin(), facts.end(), "parent: 'ddprun'") == 1);
  CHECK(std::count(facts.begin(), facts.end(), "parent_death_signal: 9") == 1);
  CHECK(std::count(facts.begin(), facts.end(), "own_process_group: True") == 1);
  CHECK(std::count(facts.begin(), facts.end(), "c_environ_is_os_environ: True") == 1);
  const bool bound = std::count(variant.args.begin(), variant.args.end(), "--numa_binding=node");
  CHECK(std::count(facts.begin(), facts.end(), "memory_policy_preferred: True") == (bound ? 1 : 0));
}

TEST_CASE(
    "a forked worker at a terminal has it as its controlling terminal, and reads rank 0's input",
    "[sanitizers]") {
  if (!HavePytorch()) return;
  auto prefix = PytorchEnvPrefix();
  prefix.push_back("PYTHONPATH=" + kPreloadScripts);
  auto ddprun_at_terminal = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = prefix;
    for (const auto& arg : Ddprun(std::move(args))) argv.push_back(arg);
    return argv;
  };
  std::string screens[2];
  for (int warm = 0; warm < 2; ++warm) {
    std::vector<std::string> args = {"--standalone", "--nproc_per_node=1", "--run_id=facts"};
    if (warm == 1) args.push_back("--python_preload=torch");
    args.push_back(PreloadScript("process_facts.py"));
    TerminalProcess job(ddprun_at_terminal(args));
    const auto exit = job.Wait(180s);
    REQUIRE(exit.has_value());
    INFO(job.screen());
    CHECK(exit->exit_code == 0);
    screens[warm] = job.screen();
  }
  const auto fresh_facts = Facts(screens[0], 0);
  CHECK(std::count(fresh_facts.begin(), fresh_facts.end(), "own_session: True") == 1);
  CHECK(std::count(fresh_facts.begin(), fresh_facts.end(), "stdio_ttys: [True, True, True]") == 1);
  CHECK(Facts(screens[1], 0) == fresh_facts);

  TerminalProcess reader(
      ddprun_at_terminal({"--standalone", "--nproc_per_node=2", "--python_preload=torch",
                          PreloadScript("read_stdin.py")}));
  REQUIRE(reader.WaitFor("ready for input", 180s));
  reader.Type("typed by the user\n");
  const auto exit = reader.Wait(60s);
  INFO(reader.screen());
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 0);
  CHECK(Count(reader.screen(), "[rank0]: read: typed by the user") == 1);
}

TEST_CASE("every restart forks from the one interpreter, with fresh random state, none left",
          "[sanitizers]") {
  if (!HavePytorch()) return;
  ScratchDir dir;
  const std::string marker = dir / "imported_by";
  auto result = RunJob({"--max_restarts=2", "--python_preload=torch,numpy,preload_marker",
                        PreloadScript("restart_probe.py"), "2"},
                       {{"PRELOAD_MARKER_FILE", marker}});
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  const auto interpreters = MarkerPids(marker);
  REQUIRE(interpreters.size() == 1);  // imported once, for three attempts of two workers
  std::set<std::string> draws;
  for (int rank = 0; rank < 2; ++rank) {
    const auto lines = RankLines(result.out, rank);
    REQUIRE(lines.size() == 3);
    for (const auto& line : lines) {
      CHECK_THAT(line, Catch::Contains("warm=True"));
      draws.insert(line.substr(line.find("random=")));
    }
  }
  CHECK(draws.size() == 6);  // Python's and numpy's draws differ by rank and by attempt
  CHECK(WaitForProcessGone(std::stoi(interpreters[0]), 10s));
}

TEST_CASE("a preloading interpreter that died is replaced, the attempt meanwhile starting by exec",
          "[sanitizers]") {
  if (!HavePytorch()) return;
  ScratchDir dir;
  const std::string marker = dir / "imported_by";
  auto result = RunJob({"--max_restarts=2", "--python_preload=torch,preload_marker",
                        PreloadScript("restart_probe.py"), "2", "--kill-preload"},
                       {{"PRELOAD_MARKER_FILE", marker}});
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  // Seen as the next attempt starts, or as it asks the dying interpreter for a worker.
  CHECK(Count(result.err,
              "ddprun: warning: --python_preload: the preloading interpreter was killed by "
              "SIGKILL") == 1);
  CHECK(Count(result.err, "starting another, workers start normally until it is ready\n") == 1);
  const auto lines = RankLines(result.out, 0);
  REQUIRE(lines.size() == 3);
  CHECK_THAT(lines[0], Catch::Contains("attempt=0") && Catch::Contains("warm=True"));
  CHECK_THAT(lines[1], Catch::Contains("attempt=1") && Catch::Contains("warm=False"));
  CHECK_THAT(lines[2], Catch::Contains("attempt=2") && Catch::Contains("warm=True"));
  const auto interpreters = MarkerPids(marker);
  REQUIRE(interpreters.size() == 2);
  CHECK(WaitForProcessGone(std::stoi(interpreters[1]), 10s));
}

TEST_CASE("a preload that cannot serve leaves normal starts, with one warning line",
          "[sanitizers]") {
  if (!HavePytorch()) return;
  struct Case {
    const char* modules;
    const char* warning;
  };
  const Case failing =
      GENERATE(Case{"torch,no_such_module_here",
                    "ddprun: warning: --python_preload: importing no_such_module_here failed: "
                    "ModuleNotFoundError: No module named 'no_such_module_here'; the workers start "
                    "normally\n"},
               Case{"starts_thread",
                    "ddprun: warning: --python_preload: importing starts_thread started 1 Python "
                    "thread(s), which a fork would not copy; the workers start normally\n"});
  auto result = RunJob({std::string("--python_preload=") + failing.modules, "--max_restarts=1",
                        PreloadScript("restart_probe.py"), "1"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.err, "--python_preload") == 1);
  CHECK(Count(result.err, failing.warning) == 1);
  const auto lines = RankLines(result.out, 1);
  REQUIRE(lines.size() == 2);
  for (const auto& line : lines) CHECK_THAT(line, Catch::Contains("warm=False"));
}

TEST_CASE(
    "a program that is not Python runs as it was with --python_preload, and a bad name is "
    "refused",
    "[sanitizers]") {
  auto not_python = Run(Ddprun({"--python_preload=torch", "/bin/true"}));
  CHECK(not_python.code() == 0);
  CHECK(not_python.err.empty());
  auto no_python = Run(Ddprun({"--python_preload=torch", "--no_python", "/bin/echo", "x.py"}));
  CHECK(no_python.code() == 0);
  CHECK(no_python.err.empty());
  auto bad = Run(Ddprun({"--python_preload=torch,no such", "/bin/true"}));
  CHECK(bad.code() == 2);
  CHECK_THAT(bad.err, Catch::Contains("--python_preload: 'no such' is not a module name"));
}
