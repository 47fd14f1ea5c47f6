// torchrun 2.x's command line and worker environment, read from the installed torch itself: every
// flag its own parser (torch.distributed.run.get_args_parser()) defines, in each of its
// spellings, is accepted by ddprun with torchrun's meaning or refused in one line that names it
// as not supported; and a worker started by the real torchrun sees the variables one started by
// ddprun sees, with the same values where they mean the same. A flag a later torch adds fails
// the first test until this file says what ddprun does with it.
#include <catch2/catch.hpp>
#include <set>

#include "ddprun/base/parsing.h"
#include "integration/launcher/launcher_test_support.h"
#include "pytorch_support.h"
#include "support/own_loopback_address.h"

using namespace ddprun::testing;

namespace {

const std::string kPrintEnvironment = Script("torch2/print_environment.py");

// One flag of torchrun's parser: its dest, whether it takes a value, its choices, spellings.
struct TorchrunFlag {
  std::string dest = {};
  bool takes_value = false;
  std::vector<std::string> choices = {};
  std::vector<std::string> spellings = {};
};

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// The flags of the installed torch's torchrun, from its own parser.
std::vector<TorchrunFlag> TorchrunFlags() {
  const auto listed = Run({PythonWithTorch(), "-c",
                           "import torch.distributed.run as run\n"
                           "for a in run.get_args_parser()._actions:\n"
                           "    print('\\t'.join([a.dest, '0' if a.nargs == 0 else '1',\n"
                           "        ','.join(a.choices or []) or '-', ' '.join(a.option_strings) "
                           "or '-']))\n"},
                          {}, 120s);
  INFO(listed.err);
  REQUIRE(listed.code() == 0);
  std::vector<TorchrunFlag> flags;
  for (const auto& line : Lines(listed.out)) {
    const auto fields = Split(line, '\t');
    REQUIRE(fields.size() == 4);
    TorchrunFlag flag{.dest = fields[0], .takes_value = fields[1] == "1"};
    if (fields[2] != "-") flag.choices = ddprun::SplitCommas(fields[2]);
    if (fields[3] != "-") flag.spellings = Split(fields[3], ' ');
    flags.push_back(flag);
  }
  return flags;
}

// What ddprun does with one of torchrun's flags: the command around it, the value it is given
// (each of its choices, where it has some), and what shows the meaning: variables a rank sees,
// text on the console or not there, or a refusal.
struct Meaning {
  std::vector<std::string> before = {"--standalone", "--nproc_per_node=1"};
  std::vector<std::string> value = {};  // after the flag; none for a switch or with choices
  std::vector<std::string> program = {kPrintEnvironment};
  std::map<std::string, std::string> rank0 = {};  // "NAME" -> the value rank 0 sees
  std::map<std::string, std::string> rank1 = {};
  std::vector<std::string> shown = {};      // on the console
  std::vector<std::string> not_shown = {};  // not on the console
  bool refused = false;                     // exit 2, one line naming the flag as not supported
};

// ddprun's answer to each flag of torchrun 2.x, by dest. A dest missing here fails the test.
std::map<std::string, Meaning> Meanings(const std::string& scratch) {
  const std::string endpoint = OwnLoopbackAddress(0) + ":29400";
  const std::vector<std::string> rendezvous = {
      "--nnodes=1", "--nproc_per_node=1", "--rdzv_backend=c10d", "--rdzv_endpoint=" + endpoint};
  std::map<std::string, Meaning> meanings;
  meanings["help"] = {.program = {}, .shown = {"--nproc_per_node"}};
  meanings["nnodes"] = {.value = {"1"}, .rank0 = {{"GROUP_WORLD_SIZE", "1"}}};
  meanings["nproc_per_node"] = {.before = {"--standalone"},
                                .value = {"2"},
                                .rank0 = {{"LOCAL_WORLD_SIZE", "2"}, {"WORLD_SIZE", "2"}},
                                .rank1 = {{"RANK", "1"}}};
  meanings["rdzv_backend"] = {.value = {"c10d"}};
  meanings["rdzv_endpoint"] = {.before = {"--nnodes=1", "--nproc_per_node=1"}, .value = {endpoint}};
  meanings["rdzv_id"] = {.before = rendezvous,
                         .value = {"flags-job"},
                         .rank0 = {{"TORCHELASTIC_RUN_ID", "flags-job"}}};
  meanings["rdzv_conf"] = {.before = rendezvous, .value = {"join_timeout=30"}};
  meanings["standalone"] = {.before = {"--nproc_per_node=1"}, .rank0 = {{"WORLD_SIZE", "1"}}};
  meanings["max_restarts"] = {.value = {"2"}, .rank0 = {{"TORCHELASTIC_MAX_RESTARTS", "2"}}};
  meanings["monitor_interval"] = {.value = {"0.5"}};
  meanings["start_method"] = {};
  meanings["event_log_handler"] = {.value = {"console"}};
  meanings["role"] = {.value = {"trainer"}, .rank0 = {{"ROLE_NAME", "trainer"}}};
  meanings["module"] = {.value = {"print_environment"}, .program = {}, .rank0 = {{"RANK", "0"}}};
  meanings["no_python"] = {.program = {PythonWithTorch(), kPrintEnvironment},
                           .rank0 = {{"RANK", "0"}}};
  meanings["run_path"] = {.rank0 = {{"RANK", "0"}}};
  meanings["log_dir"] = {.value = {scratch + "/logs"}, .rank0 = {{"RANK", "0"}}};
  meanings["redirects"] = {
      .before = {"--standalone", "--nproc_per_node=1", "--log_dir=" + scratch + "/redirected"},
      .value = {"3"},
      .not_shown = {"[rank0]: env RANK=0"}};
  meanings["tee"] = {.value = {"3"}, .rank0 = {{"RANK", "0"}}};
  meanings["log_line_prefix_template"] = {.value = {"[${role_name}${rank}]:"},
                                          .shown = {"[default0]:env RANK=0"}};
  meanings["local_ranks_filter"] = {.before = {"--standalone", "--nproc_per_node=2"},
                                    .value = {"0"},
                                    .rank0 = {{"RANK", "0"}},
                                    .not_shown = {"[rank1]: "}};
  meanings["duplicate_stdout_filters"] = {.value = {"error"}, .refused = true};
  meanings["duplicate_stderr_filters"] = {.value = {"error"}, .refused = true};
  meanings["node_rank"] = {.value = {"0"}, .rank0 = {{"GROUP_RANK", "0"}}};
  meanings["master_addr"] = {.before = {"--nnodes=1", "--nproc_per_node=1"},
                             .value = {OwnLoopbackAddress(1)},
                             .rank0 = {{"MASTER_ADDR", OwnLoopbackAddress(1)}}};
  meanings["master_port"] = {
      .before = {"--nnodes=1", "--nproc_per_node=1", "--master_addr=" + OwnLoopbackAddress(2)},
      .value = {"29500"}};
  meanings["local_addr"] = {.value = {"127.0.0.1"}};
  meanings["logs_specs"] = {.value = {"mypackage.specs"}, .refused = true};
  meanings["numa_binding"] = {};
  meanings["signals_to_handle"] = {.value = {"SIGTERM,SIGINT"}};
  meanings["shutdown_timeout"] = {.value = {"5"}};
  meanings["virtual_local_rank"] = {.before = {"--standalone", "--nproc_per_node=2"},
                                    .rank1 = {{"RANK", "1"}, {"LOCAL_RANK", "0"}}};
  meanings["print_completion"] = {.refused = true};
  return meanings;
}

// The environment of the launchers in these tests: torch's interpreter first on PATH, and the
// directory of print_environment.py importable for -m.
std::map<std::string, std::string> LauncherEnv() {
  auto env = PytorchEnv();
  env["PYTHONPATH"] = kPytorchScripts + "/torch2";
  return env;
}

// The "env NAME=VALUE" lines of one rank as a map: those behind "[rankN]:", or, with rank -1,
// every line (a file of one rank's).
std::map<std::string, std::string> RankEnvironment(const std::string& output, int rank,
                                                   const std::string& prefix = "[rank") {
  std::map<std::string, std::string> variables;
  const std::string start = rank < 0 ? prefix : prefix + std::to_string(rank) + "]:";
  for (const auto& line : Lines(output)) {
    if (line.rfind(start, 0) != 0) continue;
    const size_t at = line.find("env ", start.size());
    if (at == std::string::npos) continue;
    const std::string entry = line.substr(at + 4);
    const size_t eq = entry.find('=');
    if (eq != std::string::npos) variables[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return variables;
}

void CheckFlag(const TorchrunFlag& flag, const std::string& spelling,
               const std::vector<std::string>& value, const Meaning& meaning) {
  std::vector<std::string> args = meaning.before;
  args.push_back(spelling);
  args.insert(args.end(), value.begin(), value.end());
  args.insert(args.end(), meaning.program.begin(), meaning.program.end());
  const auto result = Run(Ddprun(args), LauncherEnv(), 120s);
  std::string command;
  for (const auto& arg : args) command += " " + arg;
  INFO("torchrun's " << flag.dest << ": ddprun" << command);
  INFO(result.out << result.err);
  if (meaning.refused) {
    CHECK(result.code() == 2);
    const auto lines = Lines(result.err);
    REQUIRE(lines.size() == 1);
    CHECK_THAT(lines[0], Catch::Contains("not supported"));
    bool named = false;
    for (const auto& name : flag.spellings) {
      std::string underscored = name;
      std::replace(underscored.begin(), underscored.end(), '-', '_');
      underscored.replace(0, 2, "--");
      named = named || Count(lines[0], name) > 0 || Count(lines[0], underscored) > 0;
    }
    CHECK(named);
    return;
  }
  CHECK(result.code() == 0);
  const auto rank0 = RankEnvironment(result.out, 0);
  for (const auto& [name, expected] : meaning.rank0) {
    INFO("rank 0's " << name);
    CHECK(rank0.count(name) == 1);
    if (rank0.count(name)) CHECK(rank0.at(name) == expected);
  }
  const auto rank1 = RankEnvironment(result.out, 1);
  for (const auto& [name, expected] : meaning.rank1) {
    INFO("rank 1's " << name);
    CHECK(rank1.count(name) == 1);
    if (rank1.count(name)) CHECK(rank1.at(name) == expected);
  }
  for (const auto& text : meaning.shown) CHECK(Count(result.out + result.err, text) >= 1);
  for (const auto& text : meaning.not_shown) CHECK(Count(result.out + result.err, text) == 0);
}

}  // namespace

TEST_CASE(
    "every flag of the installed torchrun 2.x, in each spelling, means the same to ddprun "
    "or is refused as not supported") {
  if (!HaveTorch2("reading torchrun 2.x's flags")) return;
  ScratchDir scratch;
  const auto meanings = Meanings(scratch.path());
  const auto flags = TorchrunFlags();
  std::set<std::string> seen;
  for (const TorchrunFlag& flag : flags) {
    seen.insert(flag.dest);
    if (flag.spellings.empty()) {  // the positional training_script and its arguments
      CHECK((flag.dest == "training_script" || flag.dest == "training_script_args"));
      continue;
    }
    INFO("torch " << TorchVersion() << "'s torchrun has " << flag.spellings.front());
    const auto known = meanings.find(flag.dest);
    if (known == meanings.end()) {
      FAIL("a flag ddprun's tests do not know (dest " + flag.dest +
           "): decide what ddprun does with it, then say so in this test's Meanings");
    }
    const Meaning& meaning = known->second;
    std::vector<std::vector<std::string>> values;
    if (!flag.choices.empty() && !meaning.refused) {
      for (const auto& choice : flag.choices) values.push_back({choice});
    } else if (flag.takes_value && meaning.value.empty()) {
      values.push_back({flag.choices.empty() ? "x" : flag.choices.front()});
    } else {
      values.push_back(meaning.value);
    }
    for (const auto& spelling : flag.spellings) {
      for (const auto& value : values) CheckFlag(flag, spelling, value, meaning);
    }
  }
  CHECK(seen.count("nproc_per_node") == 1);  // the parser was read
}

TEST_CASE(
    "a worker started by the real torchrun 2.x and one started by ddprun see the same "
    "variables, with the same values where they mean the same") {
  if (!HaveTorch2("running torchrun 2.x")) return;
  // Both launchers run with the same flags in the same small environment, so that what differs
  // is what each sets; each rank writes its environment to a file of its own.
  const auto launch = [](std::vector<std::string> launcher, const std::string& directory) {
    std::vector<std::string> command = {"/usr/bin/env", "-i", "PATH=" + PathWithTorch(),
                                        "HOME=" + std::string(std::getenv("HOME"))};
    command.insert(command.end(), launcher.begin(), launcher.end());
    for (const char* arg :
         {"--standalone", "--nproc-per-node=2", "--max-restarts=1", "--role=trainer"}) {
      command.push_back(arg);
    }
    command.push_back(kPrintEnvironment);
    command.push_back(directory);
    return Run(command, {}, 180s);
  };
  ScratchDir theirs, ours;
  const auto by_torchrun =
      launch({PythonWithTorch(), "-m", "torch.distributed.run"}, theirs.path());
  const auto by_ddprun = launch({kDdprun}, ours.path());
  INFO(by_torchrun.out << by_torchrun.err << by_ddprun.out << by_ddprun.err);
  REQUIRE(by_torchrun.code() == 0);
  REQUIRE(by_ddprun.code() == 0);
  // What differs by nature, and why. Every other variable torchrun sets, ddprun sets the same.
  const std::map<std::string, std::string> kDiffering = {
      {"MASTER_ADDR",
       "the loopback: 127.0.0.1 by number, where torchrun's --standalone names "
       "it localhost"},
      {"MASTER_PORT", "a free port, each launcher its own"},
      {"TORCHELASTIC_RUN_ID", "a new random id for each run of --standalone"},
      {"TORCHELASTIC_ERROR_FILE", "a path in each launcher's own log directory"},
  };
  // Set by torchrun's own interpreter, not by torchrun: Python's locale coercion (PEP 538).
  const std::set<std::string> kInterpreters = {"LC_CTYPE"};
  for (int rank = 0; rank < 2; ++rank) {
    const std::string file = "/rank" + std::to_string(rank) + ".env";
    const auto torchrun_env = RankEnvironment(ReadFile(theirs.path() + file), -1, "");
    const auto ddprun_env = RankEnvironment(ReadFile(ours.path() + file), -1, "");
    INFO("rank " << rank);
    REQUIRE(!torchrun_env.empty());
    for (const auto& [name, value] : torchrun_env) {
      if (kInterpreters.count(name)) continue;
      INFO(name << ": torchrun " << value);
      REQUIRE(ddprun_env.count(name) == 1);
      if (kDiffering.count(name) == 0) CHECK(ddprun_env.at(name) == value);
    }
  }
}
