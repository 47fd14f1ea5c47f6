// Bad input: a one-line error that names the problem, exit status 2, and no process started.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

namespace {

// Runs ddprun with `flags` and a worker that would create a marker file, and checks the usage
// error: exit 2, one line on stderr containing `expected`, nothing on stdout, no worker started.
void ExpectUsageError(const std::vector<std::string>& flags, const std::string& expected) {
  ScratchDir dir;
  const std::string marker = dir / "started";
  std::vector<std::string> args = flags;
  args.insert(args.end(), {kTestWorker, "touch", marker});
  auto result = Run(Ddprun(args));
  INFO("flags: " << Catch::Detail::stringify(flags) << "\nstderr: " << result.err);
  CHECK(result.code() == 2);
  CHECK(Lines(result.err).size() == 1);
  CHECK(result.err.rfind("ddprun: error: ", 0) == 0);
  CHECK(result.err.find(expected) != std::string::npos);
  CHECK(result.out.empty());
  CHECK_FALSE(std::filesystem::exists(marker));
}

}  // namespace

TEST_CASE("bad flags are refused with one line and exit status 2, starting nothing") {
  ExpectUsageError({"--standalone", "--bogus"}, "unrecognized option --bogus");
  ExpectUsageError({"--nproc_per_node=0"}, "--nproc_per_node must be");
  ExpectUsageError({"--nproc_per_node=-1"}, "--nproc_per_node must be");
  ExpectUsageError({"--nproc_per_node=abc"}, "not 'abc'");
  ExpectUsageError({"--nproc_per_node=100000000"}, "--nproc_per_node must be");
  ExpectUsageError({"--nnodes=2:1"}, "--nnodes must be");
  ExpectUsageError({"--nnodes=x"}, "--nnodes must be");
  ExpectUsageError({"--nnodes=1:"}, "--nnodes must be");
  ExpectUsageError({"--max_restarts=-1"}, "--max_restarts must be 0 or more");
  ExpectUsageError({"--redirects=7"}, "--redirects must be");
  ExpectUsageError({"--nproc_per_node=2", "--local_ranks_filter=5"}, "--local_ranks_filter");
  ExpectUsageError({"--master_port=70000"}, "--master_port must be");
  ExpectUsageError({"--shutdown_timeout=-1"}, "--shutdown_timeout");
  ExpectUsageError({"--max_restarts"}, "--max_restarts");
  ExpectUsageError({"--standalone", "--metrics_port=70000"}, "--metrics_port must be from 0 to");
  ExpectUsageError({"--standalone", "--metrics_port=-3"}, "--metrics_port must be at least 0");
}

TEST_CASE("no program, a missing program and a non-executable one are usage errors") {
  auto none = Run(Ddprun({"--standalone"}));
  CHECK(none.code() == 2);
  CHECK(none.err.find("no program to run") != std::string::npos);

  auto missing = Run(Ddprun({"--standalone", "./does-not-exist"}));
  CHECK(missing.code() == 2);
  CHECK(missing.err.find("'./does-not-exist' does not exist") != std::string::npos);

  auto not_on_path = Run(Ddprun({"--standalone", "no-such-program-anywhere"}));
  CHECK(not_on_path.code() == 2);
  CHECK(not_on_path.err.find("not found on PATH") != std::string::npos);

  ScratchDir dir;
  const std::string plain = dir / "plain";
  std::ofstream(plain) << "not a program\n";
  ::chmod(plain.c_str(), 0644);
  auto not_executable = Run(Ddprun({"--standalone", plain}));
  CHECK(not_executable.code() == 2);
  CHECK(not_executable.err.find("is not executable") != std::string::npos);

  auto missing_script =
      Run(Ddprun({"--standalone", dir / "missing.py"}), {{"PYTHON_EXEC", "/bin/echo"}});
  CHECK(missing_script.code() == 2);
  CHECK(missing_script.err.find("does not exist or cannot be read") != std::string::npos);
}

TEST_CASE("a --log_dir that cannot be created is a usage error") {
  ScratchDir dir;
  const std::string file = dir / "a-file";
  std::ofstream(file) << "x";
  ExpectUsageError({"--standalone", "--log_dir=" + file + "/logs"}, "--log_dir: cannot create");
}

TEST_CASE("the flag --help documents every flag and --version prints the version") {
  auto help = Run(Ddprun({"--help"}));
  CHECK(help.code() == 0);
  for (const char* flag :
       {"--nproc_per_node", "--nnodes", "--standalone", "--max_restarts", "--monitor_interval",
        "--rdzv_id", "--run_id", "--role", "--log_dir", "--redirects", "--tee",
        "--local_ranks_filter", "--module", "--no_python", "--node_rank", "--master_addr",
        "--master_port", "--shutdown_timeout", "--version"}) {
    INFO(flag);
    CHECK(help.out.find(flag) != std::string::npos);
  }
  auto version = Run(Ddprun({"--version"}));
  CHECK(version.code() == 0);
  CHECK(version.out.rfind("ddprun ", 0) == 0);
}
