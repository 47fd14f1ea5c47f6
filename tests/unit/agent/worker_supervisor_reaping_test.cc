// The supervisor reaps its own workers and nothing else: another child of the same process
// (a library's, the program's) stays for its owner to wait for.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "ddprun/agent/local_coordinator.h"
#include "ddprun/agent/worker_group_supervisor.h"
#include "support/child_process.h"

using namespace ddprun;
using ddprun::testing::ScratchDir;

TEST_CASE("the supervisor reaps only its own workers, never another child of the process") {
  // A child of this process that is not a worker, already exited (a zombie until reaped): any
  // waitpid(-1) would take it.
  const pid_t other = ::fork();
  REQUIRE(other >= 0);
  if (other == 0) ::_exit(7);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(other), &info, WEXITED | WNOWAIT) == 0);

  ScratchDir dir;
  boost::asio::io_context io;
  NodeAssignment round;
  round.group_world_size = 1;
  round.world_size = 2;
  round.master_addr = "127.0.0.1";
  round.master_port = 1;
  LocalCoordinator coordinator(io, round, 0);
  SupervisorOptions options;
  options.nproc = 2;
  options.coordinator = &coordinator;
  options.worker_argv = {"/bin/sh", "-c", "exit 0"};
  options.program_label = "sh";
  options.log_layout = RunLogLayout::Claim(dir.path(), "reaping").value();
  options.host = "127.0.0.1";
  options.environment = [](const WorkerPlacement&, const NodeAssignment&, const std::string&) {
    return CurrentEnvironment();
  };
  WorkerGroupSupervisor supervisor(io, options);
  CHECK(supervisor.Run() == 0);

  // Still ours to reap, with its own status.
  int status = 0;
  REQUIRE(::waitpid(other, &status, WNOHANG) == other);
  CHECK(WEXITSTATUS(status) == 7);
}
