// The command line of a job for many hosts (--hosts, --hostfile, --export, --detach): what the
// submitter fills in, what it sends each host's agent, and what travels of its environment.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>

#include "command_line.h"
#include "exported_environment.h"
#include "host_list.h"
#include "support/child_process.h"

using namespace ddprun;

namespace {

SubmitRequest Submitted(const std::vector<std::string>& args) {
  auto parsed = ParseCommandLine(args);
  if (auto* error = std::get_if<UsageError>(&parsed)) FAIL("usage error: " << error->message);
  REQUIRE(std::holds_alternative<SubmitRequest>(parsed));
  return std::get<SubmitRequest>(parsed);
}

bool Has(const std::vector<std::string>& args, const std::string& arg) {
  return std::find(args.begin(), args.end(), arg) != args.end();
}

}  // namespace

TEST_CASE("a job for --hosts gets --nnodes, the first host's rendezvous and a job id") {
  SubmitRequest request =
      Submitted({"--hosts", "h0,h1:29500,h2", "--nproc_per_node=8", "train.py", "--epochs", "3"});
  CHECK(request.hosts == std::vector<std::string>{"h0:29400", "h1:29500", "h2:29400"});
  CHECK(request.rendezvous == "h0:29400");
  CHECK(request.job_id.size() == 36);  // a uuid, as --standalone makes
  CHECK(request.program == std::vector<std::string>{"train.py", "--epochs", "3"});
  CHECK(Has(request.agent_args, "--nproc_per_node=8"));
  CHECK(Has(request.agent_args, "--nnodes=3:3"));
  // The agents' rendezvous, until the daemons' answers say they share a store (submit.cc).
  CHECK(request.agent_rendezvous == "h0:29400");
  CHECK_FALSE(request.rendezvous_given);
  CHECK(Has(request.agent_args, "--rdzv_id=" + request.job_id));
  // The submitter's own options never reach the agents.
  for (const std::string& arg : request.agent_args) {
    CHECK(arg.rfind("--hosts", 0) != 0);
    CHECK(arg != "h0,h1:29500,h2");
  }
  CHECK_FALSE(request.detach);
}

TEST_CASE("the user's --nnodes, --rdzv_endpoint and --rdzv_id win, and its token stays home") {
  ddprun::testing::ScratchDir dir;
  std::ofstream(dir / "token") << "secret\n";
  SubmitRequest request = Submitted({"--hosts=a,b,c", "--nnodes", "2:4", "--rdzv_endpoint=r:1234",
                                     "--rdzv-id", "job-7", "--token-file", dir / "token",
                                     "--detach", "--export=NONE", "--max_restarts=2", "prog"});
  CHECK(request.rendezvous == "r:1234");
  CHECK(request.agent_rendezvous == "r:1234");
  CHECK(request.rendezvous_given);
  CHECK(request.job_id == "job-7");
  CHECK(request.security.token == "secret");
  CHECK(request.detach);
  CHECK(request.environment.empty());
  CHECK(Has(request.agent_args, "--nnodes=2:4"));
  CHECK(Has(request.agent_args, "--max_restarts=2"));
  for (const std::string& arg : request.agent_args) {
    CHECK(arg.find("token") == std::string::npos);
    CHECK(arg != "2:4");
    CHECK(arg != "job-7");
    CHECK(arg != "--detach");
  }
  CHECK(std::count_if(request.agent_args.begin(), request.agent_args.end(),
                      [](auto& arg) { return arg.rfind("--nnodes", 0) == 0; }) == 1);
}

TEST_CASE("a submitted job counts each host's devices there, not the submitting machine's") {
  // No GPU here: the hosts' agents count theirs.
  SubmitRequest request =
      Submitted({"--hosts=a,b", "--nproc_per_node=gpu", "--local_ranks_filter=7", "train.py"});
  CHECK(Has(request.agent_args, "--nproc_per_node=gpu"));
  CHECK(Has(request.agent_args, "--local_ranks_filter=7"));
}

TEST_CASE("a submitted program is looked for on the hosts, not on the submitting machine") {
  SubmitRequest request = Submitted({"--hosts=a", "./only-on-the-hosts", "x"});
  CHECK(request.program == std::vector<std::string>{"./only-on-the-hosts", "x"});
  CHECK(request.program_mode == ProgramMode::kAsTyped);
  CHECK(Submitted({"--hosts=a", "-m", "pkg.train"}).program_mode == ProgramMode::kModule);
  CHECK(Submitted({"--hosts=a", "--no_python", "x.py"}).program_mode == ProgramMode::kNoPython);
  CHECK(Submitted({"--hosts=a", "--no_python", "--run_path", "x"}).program_mode ==
        ProgramMode::kRunPath);
}

TEST_CASE("what a host's daemon needs of the agents' options travels as fields") {
  SubmitRequest request = Submitted({"--hosts=a,b", "--shutdown_timeout=7.5", "train.py"});
  CHECK(request.shutdown_timeout == std::chrono::milliseconds(7500));
  CHECK(request.rendezvous == "a:29400");
  CHECK(Submitted({"--hosts=a", "train.py"}).shutdown_timeout == std::chrono::seconds(30));
}

TEST_CASE("a host file lists one host a line, with comments and blank lines") {
  ddprun::testing::ScratchDir dir;
  std::ofstream(dir / "hosts") << "# the rack\nn0\n\n  n1:29411  # spare port\nn2\n";
  auto hosts = ReadHostFile(dir / "hosts");
  REQUIRE(hosts.ok());
  CHECK(hosts.value() == std::vector<std::string>{"n0:29400", "n1:29411", "n2:29400"});
  std::ofstream(dir / "bad") << "n0\nn1:x\n";
  auto bad = ReadHostFile(dir / "bad");
  CHECK(bad.status().message() ==
        "--hostfile " + dir / "bad" + ":2: 'n1:x' is not HOST or HOST:PORT");
}

TEST_CASE("a host file that never ends or a host with a comma or a newline is refused") {
  CHECK(ReadHostFile("/dev/zero").status().message() ==
        "--hostfile /dev/zero is larger than 32 MiB");
  ddprun::testing::ScratchDir dir;
  std::ofstream(dir / "hosts") << "n0,n1\n";
  CHECK(ReadHostFile(dir / "hosts").status().message() ==
        "--hostfile " + dir / "hosts" + ":1: 'n0,n1' is not HOST or HOST:PORT");
  // Found by the host_list fuzzer; the message stays on one line.
  CHECK(ParseHostList("n0\nevil,n1").status().message() ==
        "--hosts: 'n0\\nevil' is not HOST or HOST:PORT");
}

TEST_CASE("exporting ALL sends everything but what describes the submitting host or session") {
  const std::map<std::string, std::string> env = {
      {"PATH", "/opt/bin"},       {"NCCL_DEBUG", "INFO"},  {"HOSTNAME", "login1"},
      {"DISPLAY", ":0"},          {"SSH_AUTH_SOCK", "/x"}, {"SSH_CONNECTION", "a b"},
      {"PWD", "/home/u"},         {"SHLVL", "2"},          {"DDPRUN_TOKEN", "secret"},
      {"XDG_RUNTIME_DIR", "/run"}};
  auto all = ExportedEnvironment("ALL", env);
  REQUIRE(all.ok());
  CHECK(all.value() ==
        std::map<std::string, std::string>{{"PATH", "/opt/bin"}, {"NCCL_DEBUG", "INFO"}});
  CHECK(ExportedEnvironment("NONE", env)->empty());  // no PET_ variable in env
  auto list = ExportedEnvironment("PATH,OMP_NUM_THREADS=4,UNSET_ONE", env);
  CHECK(list.value() ==
        std::map<std::string, std::string>{{"PATH", "/opt/bin"}, {"OMP_NUM_THREADS", "4"}});
  auto all_and = ExportedEnvironment("ALL,NCCL_DEBUG=WARN", env);
  CHECK(all_and->at("NCCL_DEBUG") == "WARN");
  CHECK(all_and->count("PATH") == 1);
  CHECK_FALSE(ExportedEnvironment("PATH,ALL", env).ok());  // ALL first, if at all
  // Each host's devices are its own; ddprun's PET_ settings travel whatever --export says.
  const std::map<std::string, std::string> devices = {
      {"CUDA_VISIBLE_DEVICES", "0"}, {"TMPDIR", "/tmp/job-7"}, {"PET_NPROC_PER_NODE", "8"}};
  CHECK(ExportedEnvironment("ALL", devices).value() ==
        std::map<std::string, std::string>{{"PET_NPROC_PER_NODE", "8"}});
  CHECK(ExportedEnvironment("NONE", devices).value() ==
        std::map<std::string, std::string>{{"PET_NPROC_PER_NODE", "8"}});
  CHECK_FALSE(ExportedEnvironment("", env).ok());
  CHECK_FALSE(ExportedEnvironment("A-B=1", env).ok());
}
