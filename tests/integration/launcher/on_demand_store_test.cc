// A single node's store starts when a worker first uses it, served by the network launcher's
// store mode as ddprun's child, and ends with the job, even with kill -9 of ddprun; a job that
// never uses it starts nothing. `ddprun` itself links no gRPC (a test of its symbols, in
// tests/CMakeLists.txt), and without the network launcher beside it still runs one node's job and
// says what is missing for the rest.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

namespace {

// Prints "store <pid>" for each child of ddprun (the worker's parent) that is the store's helper:
// its first argument is the store mode's.
const std::string kPrintStoreHelpers =
    "for list in /proc/$PPID/task/*/children; do for child in $(cat $list); do "
    "if [ \"$(tr '\\0' '\\n' < /proc/$child/cmdline 2>/dev/null | sed -n 2p)\" = "
    "__store_helper ]; then echo \"store $child\"; fi; done; done; ";

// The helpers' pids, from the workers' "store <pid>" lines.
std::vector<pid_t> StoreHelpers(const std::string& output) {
  return PidsAfter(output, "]: store ");
}

}  // namespace

TEST_CASE("the store's helper starts at a worker's first use of the store and ends with the job") {
  // Each worker uses the store (hello_store), then looks for the helper among ddprun's children.
  const auto run = Run(Ddprun({"--nproc_per_node=2", "/bin/sh", "-c",
                               "\"$1\" || exit 1; " + kPrintStoreHelpers, "sh", kHelloStore}));
  KillOnExit cleanup{StoreHelpers(run.out)};
  INFO(run.out << run.err);
  CHECK(run.code() == 0);
  REQUIRE(cleanup.pids.size() == 2);
  CHECK(cleanup.pids[0] == cleanup.pids[1]);       // one helper serves the job
  CHECK(WaitForProcessGone(cleanup.pids[0], 1s));  // ddprun waited for it before exiting
}

TEST_CASE("a store helper that dies during the run is started again at the next connection") {
  // The worker uses the store, kills its helper, and uses the store again.
  const std::string script = "\"$1\" || exit 1; " + kPrintStoreHelpers + "for line in $(" +
                             kPrintStoreHelpers +
                             "); do case $line in [0-9]*) kill -9 $line;; esac; done; "
                             "\"$1\" || exit 1; " +
                             kPrintStoreHelpers;
  const auto run = Run(Ddprun({"--nproc_per_node=1", "/bin/sh", "-c", script, "sh", kHelloStore}));
  KillOnExit cleanup{StoreHelpers(run.out)};
  INFO(run.out << run.err);
  CHECK(run.code() == 0);
  REQUIRE(cleanup.pids.size() == 2);
  CHECK(cleanup.pids[0] != cleanup.pids[1]);
  CHECK(run.err.find("the job's store (pid " + std::to_string(cleanup.pids[0]) +
                     ") ended during the run (signal SIGKILL") != std::string::npos);
  CHECK(WaitForProcessGone(cleanup.pids[1], 1s));
}

TEST_CASE("a job whose workers never use the store starts no store helper") {
  const auto run = Run(Ddprun({"--nproc_per_node=2", "/bin/sh", "-c", kPrintStoreHelpers}));
  KillOnExit cleanup{StoreHelpers(run.out)};
  INFO(run.out << run.err);
  CHECK(run.code() == 0);
  CHECK(cleanup.pids.empty());
}

TEST_CASE("kill -9 of ddprun ends the store's helper too") {
  ChildProcess ddprun(Ddprun({"--nproc_per_node=1", "/bin/sh", "-c",
                              "\"$1\" || exit 1; " + kPrintStoreHelpers + "echo ready; sleep 300",
                              "sh", kHelloStore}));
  REQUIRE(ddprun.WaitForStdoutLine(
      [](const std::string& line) { return line.find("]: ready") != std::string::npos; }));
  KillOnExit cleanup{StoreHelpers(ddprun.stdout_text())};
  REQUIRE(cleanup.pids.size() == 1);
  ddprun.Signal(SIGKILL);
  REQUIRE(ddprun.Wait());
  // The parent-death signal ends it; a loaded machine gets time to deliver it.
  CHECK(WaitForProcessGone(cleanup.pids[0], 10s));
}

TEST_CASE(
    "ddprun without its network launcher runs one node's job, and says what is missing for a "
    "multi-node job, a job command or a store") {
  // A copy of ddprun with no ../libexec/ddprun/ddprun beside it.
  ScratchDir dir;
  std::filesystem::create_directory(dir / "bin");
  const std::string lone = dir / "bin/ddprun";
  std::filesystem::copy_file(kDdprun, lone);

  CHECK(Run({lone, "--nproc_per_node=2", "/bin/true"}).code() == 0);
  for (std::vector<std::string> args :
       {std::vector<std::string>{"--nnodes=2", "--rdzv_endpoint=127.0.0.1:29400", "--rdzv_id=lone",
                                 "/bin/true"},
        std::vector<std::string>{"status"}}) {
    args.insert(args.begin(), lone);
    const auto run = Run(args);
    INFO(run.err);
    CHECK(run.code() == 1);
    CHECK(Lines(run.err).size() == 1);
    CHECK(run.err.find("cannot run " + dir.path() + "/bin/../libexec/ddprun/ddprun") !=
          std::string::npos);
    CHECK(run.err.find("No such file or directory; reinstall ddprun") != std::string::npos);
  }
  // A worker that uses the store is refused at once, and the log says why.
  const auto store = Run({lone, "--nproc_per_node=1", kHelloStore});
  INFO(store.err);
  CHECK(store.code() == 1);
  CHECK(store.err.find("the job's store could not start") != std::string::npos);
}

TEST_CASE("the network launcher's store mode refuses to run without ddprun's socket and token") {
  const auto run =
      Run({paths::kNetworkLauncher, "__store_helper", "7"}, {{"DDPRUN_STORE_TOKEN", "\x01"}});
  CHECK(run.code() == 2);
  CHECK(run.err ==
        "ddprun: error: the store mode is ddprun's own (a listening socket's descriptor and "
        "DDPRUN_STORE_TOKEN); run ddprun instead\n");
}
