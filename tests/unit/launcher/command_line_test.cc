// The command line: torchrun's flags and spellings, PET_* variables, validation.
#include "command_line.h"

#include <catch2/catch.hpp>
#include <cstdlib>

using namespace ddprun;

namespace {

LaunchConfig Parsed(const std::vector<std::string>& args) {
  auto parsed = ParseCommandLine(args);
  if (auto* error = std::get_if<UsageError>(&parsed)) FAIL("usage error: " << error->message);
  REQUIRE(std::holds_alternative<LaunchConfig>(parsed));
  return std::get<LaunchConfig>(parsed);
}

std::string ErrorOf(const std::vector<std::string>& args) {
  auto parsed = ParseCommandLine(args);
  REQUIRE(std::holds_alternative<UsageError>(parsed));
  return std::get<UsageError>(parsed).message;
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  ScopedEnv(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  const char* name_;
};

}  // namespace

TEST_CASE("both spellings of a flag, with = or a separate value") {
  CHECK(Parsed({"--nproc_per_node=3", "/bin/true"}).nproc_per_node == 3);
  CHECK(Parsed({"--nproc-per-node", "4", "/bin/true"}).nproc_per_node == 4);
  CHECK(Parsed({"--max-restarts=2", "/bin/true"}).max_restarts == 2);
  CHECK(Parsed({"--run-id", "x", "/bin/true"}).run_id == "x");
  CHECK(Parsed({"--rdzv_id=y", "/bin/true"}).run_id == "y");
}

TEST_CASE("PET_* variables set flags, and the command line wins over them") {
  ScopedEnv nproc("PET_NPROC_PER_NODE", "5");
  CHECK(Parsed({"/bin/true"}).nproc_per_node == 5);
  CHECK(Parsed({"--nproc_per_node=2", "/bin/true"}).nproc_per_node == 2);
}

TEST_CASE("options end at the program: its arguments are kept verbatim") {
  auto config = Parsed({"--nproc_per_node", "2", "/bin/echo", "--nproc_per_node=9", "-m", "x"});
  CHECK(config.nproc_per_node == 2);
  CHECK(config.worker_argv ==
        std::vector<std::string>{"/bin/echo", "--nproc_per_node=9", "-m", "x"});
  auto after_dashes = Parsed({"--", "/bin/echo", "a"});
  CHECK(after_dashes.worker_argv == std::vector<std::string>{"/bin/echo", "a"});
}

TEST_CASE("short flags take attached or separate values") {
  CHECK(Parsed({"-r3", "/bin/true"}).redirects.all == StdStreams::kBoth);
  CHECK(Parsed({"-t", "1", "/bin/true"}).tee.all == StdStreams::kStdout);
}

TEST_CASE("the flag --redirects and --tee take a value or a per-local-rank map") {
  auto config = Parsed({"--nproc_per_node=3", "--redirects=0:1,2:3", "/bin/true"});
  CHECK(config.redirects.For(0) == StdStreams::kStdout);
  CHECK(config.redirects.For(1) == StdStreams::kNone);
  CHECK(config.redirects.For(2) == StdStreams::kBoth);
  CHECK(ErrorOf({"--tee=0:4", "/bin/true"}).find("--tee must be") != std::string::npos);
}

TEST_CASE("the flag --nproc_per_node accepts auto and cpu, and refuses nonsense") {
  CHECK(Parsed({"--nproc_per_node=cpu", "/bin/true"}).nproc_per_node >= 1);
  CHECK(Parsed({"--nproc_per_node=auto", "/bin/true"}).nproc_per_node >= 1);
  for (const char* bad : {"0", "-1", "abc", "1.5", "99999999", ""}) {
    INFO(bad);
    CHECK(ErrorOf({std::string("--nproc_per_node=") + bad, "/bin/true"}).find("--nproc_per_node") !=
          std::string::npos);
  }
}

TEST_CASE("the flag --nproc_per_node=gpu with no GPU visible is an error that says so") {
  ScopedEnv no_gpus("CUDA_VISIBLE_DEVICES", "");
  CHECK(ErrorOf({"--nproc_per_node=gpu", "/bin/true"}).find("no GPU") != std::string::npos);
}

TEST_CASE("the flag --nnodes is N or MIN:MAX, more than one node needs --rdzv_endpoint") {
  CHECK(Parsed({"--nnodes=1", "/bin/true"}).max_nodes == 1);
  CHECK_FALSE(Parsed({"--nnodes=1:1", "/bin/true"}).multi_node);
  CHECK(ErrorOf({"--nnodes=2", "/bin/true"}).find("needs --rdzv_endpoint") != std::string::npos);
  CHECK(ErrorOf({"--nnodes=0", "/bin/true"}).find("--nnodes must be") != std::string::npos);
  auto config = Parsed({"--nnodes=2:4", "--rdzv_endpoint=h0:1234", "--rdzv_id=job7",
                        "--max_restarts=3", "--rdzv_conf=heartbeat_timeout=2", "/bin/true"});
  CHECK(config.multi_node);
  CHECK(config.rdzv_host == "h0");
  CHECK(config.rdzv_port == 1234);
  CHECK(config.run_id == "job7");
  CHECK(config.rdzv_settings.min_nodes == 2);
  CHECK(config.rdzv_settings.max_nodes == 4);
  CHECK(config.rdzv_settings.max_restarts == 3);
  CHECK(config.rdzv_settings.heartbeat_timeout == std::chrono::seconds(2));
  CHECK(Parsed({"--nnodes=2", "--rdzv_endpoint=h0", "/bin/true"}).rdzv_port == 29400);
}

TEST_CASE("the flag --rdzv_endpoint may list several daemons, each HOST or HOST:PORT") {
  auto config = Parsed({"--nnodes=2", "--rdzv_endpoint=h0:1234, h1,h2:99", "/bin/true"});
  using Endpoints = std::vector<std::pair<std::string, int>>;
  CHECK(config.rdzv_endpoints == Endpoints{{"h0", 1234}, {"h1", 29400}, {"h2", 99}});
  CHECK(config.rdzv_host == "h0");  // the first, where one endpoint is all that is needed
  CHECK(config.rdzv_port == 1234);
  CHECK(Parsed({"--nnodes=2", "--rdzv_endpoint=h0", "/bin/true"}).rdzv_endpoints ==
        Endpoints{{"h0", 29400}});
  for (const char* bad :
       {"--rdzv_endpoint=h0,,h1", "--rdzv_endpoint=h0,", "--rdzv_endpoint=h0,h1:x"}) {
    INFO(bad);
    CHECK(ErrorOf({"--nnodes=2", bad, "/bin/true"}).find("--rdzv_endpoint must be HOST") == 0);
  }
}

TEST_CASE("the flag --rdzv_endpoint is HOST or HOST:PORT, others are refused with the reason") {
  for (const char* bad :
       {"--rdzv_endpoint=h0:", "--rdzv_endpoint=h0:0", "--rdzv_endpoint=h0:x",
        "--rdzv_endpoint=:29400", "--rdzv_endpoint=h0:70000", "--rdzv_endpoint=[::1]:29400"}) {
    INFO(bad);
    CHECK(ErrorOf({"--nnodes=2", bad, "/bin/true"}).find("--rdzv_endpoint must be HOST") == 0);
  }
  CHECK(ErrorOf({"--nnodes=2", "--rdzv_endpoint=h0", "--rdzv_backend=etcd", "/bin/true"})
            .find("use --rdzv_backend=etcd-v3") != std::string::npos);
  CHECK(ErrorOf({"--nnodes=2", "--rdzv_endpoint=h0", "--rdzv_backend=zookeeper", "/bin/true"})
            .find("ddprun has its own rendezvous server") != std::string::npos);
  CHECK(ErrorOf({"--nnodes=2", "--rdzv_endpoint=h0", "--token-file=/nonexistent", "/bin/true"})
            .find("cannot read --token-file /nonexistent") == 0);
  CHECK(ErrorOf({"--nnodes=2", "--rdzv_endpoint=h0", "--tls-cert=/x", "/bin/true"})
            .find("--tls-cert and --tls-key go together") == 0);
}

TEST_CASE(
    "the flag --standalone makes a random run id unless one is given: otherwise it is 'none'") {
  auto first = Parsed({"--standalone", "/bin/true"});
  auto second = Parsed({"--standalone", "/bin/true"});
  CHECK(first.run_id.size() == 36);
  CHECK(first.run_id != second.run_id);
  CHECK(Parsed({"/bin/true"}).run_id == "none");
  CHECK(Parsed({"--standalone", "--run_id=mine", "/bin/true"}).run_id == "mine");
  CHECK(ErrorOf({"--run_id=a/b", "/bin/true"}).find("must not contain '/'") != std::string::npos);
}

TEST_CASE("the flag --shutdown_timeout is in seconds: --monitor_interval is accepted") {
  auto config = Parsed({"--shutdown_timeout=1.5", "--monitor_interval=5", "/bin/true"});
  CHECK(config.shutdown_timeout == std::chrono::milliseconds(1500));
}

TEST_CASE("the flag --help and --version are requests, not errors") {
  CHECK(std::holds_alternative<HelpRequest>(ParseCommandLine({"--help"})));
  CHECK(std::holds_alternative<HelpRequest>(ParseCommandLine({"-h"})));
  CHECK(std::holds_alternative<VersionRequest>(ParseCommandLine({"--version"})));
}

TEST_CASE("the flag -m and --no_python cannot be combined") {
  CHECK(ErrorOf({"-m", "--no_python", "pkg"}).find("cannot be used together") != std::string::npos);
}

TEST_CASE("a bad --rdzv_conf is refused before anything starts") {
  CHECK(Parsed({"--rdzv_conf=join_timeout=60,read_timeout=30", "/bin/true"}).nproc_per_node == 1);
  CHECK(ErrorOf({"--rdzv_conf=bogus=1", "/bin/true"}).find("unknown key 'bogus'") !=
        std::string::npos);
}

TEST_CASE("torchrun's plugin flags are refused with what to use instead") {
  CHECK_THAT(ErrorOf({"--logs_specs=custom", "/bin/true"}), Catch::Contains("--log_dir"));
  CHECK_THAT(ErrorOf({"--duplicate_stdout_filters=loss", "/bin/true"}), Catch::Contains("--tee"));
  CHECK_THAT(ErrorOf({"--duplicate-stderr-filters", "x", "/bin/true"}), Catch::Contains("--tee"));
  CHECK_THAT(ErrorOf({"--event_log_handler=remote", "/bin/true"}),
             Catch::Contains("DDPRUN_LOG_LEVEL"));
  CHECK_THAT(ErrorOf({"--signals_to_handle=SIGTERM,SIGUSR1", "/bin/true"}),
             Catch::Contains("'SIGUSR1'"));
}

TEST_CASE(
    "the flag --numa_binding takes torchrun's four modes, from the flag or PET_NUMA_BINDING") {
  CHECK(Parsed({"--numa_binding=node", "/bin/true"}).numa_binding == NumaBinding::kNode);
  CHECK(Parsed({"--numa-binding", "core-complex", "/bin/true"}).numa_binding ==
        NumaBinding::kCoreComplex);
  CHECK_FALSE(Parsed({"/bin/true"}).numa_binding);
  CHECK(ErrorOf({"--numa_binding=cores", "/bin/true"}) ==
        "--numa_binding must be node, socket, exclusive or core-complex, not 'cores'");
  ScopedEnv numa("PET_NUMA_BINDING", "exclusive");
  CHECK(Parsed({"/bin/true"}).numa_binding == NumaBinding::kExclusive);
}

TEST_CASE("torch.distributed.launch's --use_env and --local_rank are refused: LOCAL_RANK is set") {
  CHECK_THAT(ErrorOf({"--use_env", "/bin/true"}), Catch::Contains("os.environ['LOCAL_RANK']"));
  CHECK_THAT(ErrorOf({"--local_rank=0", "/bin/true"}), Catch::Contains("torch.distributed.launch"));
}

TEST_CASE("torchrun's accepted compatibility flags parse, with their meaning where they have one") {
  auto config = Parsed({"--signals_to_handle=SIGTERM,SIGINT,SIGHUP,SIGQUIT",
                        "--event_log_handler=null", "--virtual_local_rank", "/bin/true"});
  CHECK(config.virtual_local_rank);
  CHECK_FALSE(Parsed({"/bin/true"}).virtual_local_rank);
  CHECK(Parsed({"--event-log-handler", "console", "/bin/true"}).worker_argv ==
        std::vector<std::string>{"/bin/true"});
}

TEST_CASE("the flag --run_path runs any file as a Python script, even over --no_python") {
  ScopedEnv python("PYTHON_EXEC", "/bin/sh");  // any executable stands in for the interpreter
  auto config = Parsed({"--run_path", "--no_python", "/bin/true", "a"});
  CHECK(config.worker_argv == std::vector<std::string>{"/bin/sh", "-u", "/bin/true", "a"});
  CHECK_THAT(ErrorOf({"--run_path", "-m", "pkg.mod"}), Catch::Contains("--run_path"));
}

TEST_CASE("the hang flags set the hang settings, and a flag wins over --rdzv_conf and PET_*") {
  using namespace std::chrono_literals;
  const HangSettings off = Parsed({"/bin/true"}).rdzv_settings.hang;
  CHECK_FALSE(off.enabled());
  CHECK(off.action == HangSettings::Action::kRestart);
  const HangSettings set = Parsed({"--hang_timeout=2.5", "--hang-first-timeout=90",
                                   "--hang_action=stacks", "--hang_progress=output", "/bin/true"})
                               .rdzv_settings.hang;
  CHECK(set.timeout == 2500ms);
  CHECK(set.first_timeout == 90s);
  CHECK(set.action == HangSettings::Action::kStacks);
  CHECK(set.output_is_progress);
  CHECK(Parsed({"--rdzv_conf=hang_timeout=7,hang_first_timeout=70", "/bin/true"})
            .rdzv_settings.hang.timeout == 7s);
  CHECK(Parsed({"--rdzv_conf=hang_timeout=7", "--hang_timeout=3", "/bin/true"})
            .rdzv_settings.hang.timeout == 3s);
  ScopedEnv from_env("PET_HANG_TIMEOUT", "4");
  CHECK(Parsed({"/bin/true"}).rdzv_settings.hang.timeout == 4s);
  CHECK(Parsed({"--hang_timeout=0", "/bin/true"}).rdzv_settings.hang.timeout == 0s);
}

TEST_CASE("a daemon's agent refuses the submitter's options instead of submitting again") {
  // The daemon's agents run with DDPRUN_HOSTED_JOB set (daemon/src/job_table.cc).
  ScopedEnv hosted("DDPRUN_HOSTED_JOB", "job7");
  for (const char* option : {"--hosts=a,b", "--hostfile=/etc/hosts", "--detach", "--export=ALL"}) {
    INFO(option);
    const std::string name = std::string(option).substr(0, std::string(option).find('='));
    CHECK(ErrorOf({option, "/bin/true"}) ==
          name + " is the submitter's option, not a hosted job's agent's");
  }
  CHECK(Parsed({"--nnodes=2", "--rdzv_endpoint=h0:29400", "/bin/true"}).min_nodes == 2);
}
