// The supervisor's decisions, carried out against workers that are only records
// (FakeWorkerProcesses): which worker is signalled with what, when a group is started again, what
// Run returns. No process is started; each worker's output is a pipe the fake closes when it
// "exits", and each exit is announced as the kernel announces a child's, by SIGCHLD to this
// process. The phases themselves are tested in supervisor_phases_test.cc.
#include "ddprun/agent/worker_group_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/sinks/ostream_sink.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/post.hpp>
#include <catch2/catch.hpp>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ddprun/agent/local_coordinator.h"
#include "ddprun/agent/worker_processes.h"
#include "ddprun/base/logging.h"
#include "support/child_process.h"

using namespace ddprun;
using namespace std::chrono_literals;
using ddprun::testing::ScratchDir;

namespace {

// Far above the kernel's largest pid (PID_MAX_LIMIT, 2^22): no real process can be signalled or
// reaped by mistake.
constexpr pid_t kFirstFakePid = 10'000'000;

// What one fake worker does.
struct FakeBehaviour {
  std::optional<int> exit_code;       // exits with it as soon as it is started; nullopt: runs on
  bool ignores_stop_signals = false;  // SIGTERM, SIGINT, ... leave it running; SIGKILL never
  // Called when the worker is sent a signal (before its answer), with the signal.
  std::function<void(int signal_number)> on_signal;
};

class FakeWorkerProcesses final : public WorkerProcesses {
 public:
  // `behaviour(attempt, local_rank)`: how each started worker behaves.
  FakeWorkerProcesses(boost::asio::io_context& io,
                      std::function<FakeBehaviour(int attempt, int local_rank)> behaviour)
      : io_(io), behaviour_(std::move(behaviour)) {}

  ~FakeWorkerProcesses() override {
    for (auto& [pid, worker] : workers_) CloseOutput(worker);
  }

  // What happened, in order: "start A.R", "exit A.R N", "SIGTERM A.R" (attempt A, local rank R;
  // SIGCONT, which follows every stop signal, is left out).
  const std::vector<std::string>& events() const { return events_; }

  std::unique_ptr<WorkerStartBatch> StartBatch() override {
    return std::make_unique<Batch>(*this, attempts_++);
  }

  Result<std::optional<int>> Reap(pid_t pid) override {
    auto it = workers_.find(pid);
    if (it == workers_.end() || it->second.reaped) {
      return InternalError("cannot wait for pid " + std::to_string(pid) + ": not a child");
    }
    if (!it->second.wait_status) return std::optional<int>();
    it->second.reaped = true;
    return std::optional<int>(*it->second.wait_status);
  }

  Status SignalGroup(pid_t pgid, int signal_number) override {
    auto it = workers_.find(pgid);
    if (it == workers_.end()) return InternalError("no process group " + std::to_string(pgid));
    Worker& worker = it->second;
    if (worker.wait_status) return Status::Ok();  // gone already, as ESRCH is no error
    if (signal_number == SIGCONT) return Status::Ok();
    events_.push_back(SignalName(signal_number) + " " + worker.name);
    if (worker.behaviour.on_signal) worker.behaviour.on_signal(signal_number);
    if (signal_number == SIGKILL || !worker.behaviour.ignores_stop_signals) {
      ExitSoon(pgid, W_EXITCODE(0, signal_number));
    }
    return Status::Ok();
  }

 private:
  struct Worker {
    std::string name;  // "attempt.local_rank"
    FakeBehaviour behaviour;
    int stdout_write = -1;
    int stderr_write = -1;
    std::optional<int> wait_status;  // once exited
    bool reaped = false;
  };

  class Batch final : public WorkerStartBatch {
   public:
    Batch(FakeWorkerProcesses& owner, int attempt) : owner_(owner), attempt_(attempt) {}
    void Add(SpawnRequest) override { ++added_; }
    std::vector<Result<SpawnedWorker>> Finish() override {
      std::vector<Result<SpawnedWorker>> started;
      for (int rank = 0; rank < added_; ++rank) started.push_back(owner_.Start(attempt_, rank));
      return started;
    }

   private:
    FakeWorkerProcesses& owner_;
    const int attempt_;
    int added_ = 0;
  };

  Result<SpawnedWorker> Start(int attempt, int local_rank) {
    SpawnedWorker spawned;
    spawned.pid = next_pid_++;
    Worker worker;
    worker.name = std::to_string(attempt) + "." + std::to_string(local_rank);
    worker.behaviour = behaviour_(attempt, local_rank);
    int out[2];
    int err[2];
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
    spawned.stdout_fd = out[0];
    spawned.stderr_fd = err[0];
    worker.stdout_write = out[1];
    worker.stderr_write = err[1];
    events_.push_back("start " + worker.name);
    if (worker.behaviour.exit_code) {
      ExitSoon(spawned.pid, W_EXITCODE(*worker.behaviour.exit_code, 0));
    }
    workers_.emplace(spawned.pid, std::move(worker));
    return spawned;
  }

  // After the handler that runs now, as a real exit is seen after the call that caused it.
  void ExitSoon(pid_t pid, int wait_status) {
    boost::asio::post(io_, [this, pid, wait_status] {
      Worker& worker = workers_.at(pid);
      if (worker.wait_status) return;
      worker.wait_status = wait_status;
      events_.push_back("exit " + worker.name + " " + std::to_string(wait_status));
      CloseOutput(worker);
      ::kill(::getpid(), SIGCHLD);
    });
  }

  static void CloseOutput(Worker& worker) {
    for (int* fd : {&worker.stdout_write, &worker.stderr_write}) {
      if (*fd >= 0) ::close(*fd);
      *fd = -1;
    }
  }

  boost::asio::io_context& io_;
  std::function<FakeBehaviour(int, int)> behaviour_;
  int attempts_ = 0;
  pid_t next_pid_ = kFirstFakePid;
  std::map<pid_t, Worker> workers_;
  std::vector<std::string> events_;
};

// Two workers on one node, restarted at most `max_restarts` times, started by `processes`.
struct FakeNode {
  FakeNode(int max_restarts, std::chrono::milliseconds shutdown_timeout,
           std::function<FakeBehaviour(int attempt, int local_rank)> behaviour)
      : processes(io, std::move(behaviour)), coordinator(io, FirstRound(), max_restarts) {
    options.nproc = 2;
    options.coordinator = &coordinator;
    options.worker_argv = {"/nonexistent/fake-worker"};
    options.program_label = "fake-worker";
    options.log_layout = RunLogLayout::Claim(dir.path(), "fake").value();
    options.host = "127.0.0.1";
    options.shutdown_timeout = shutdown_timeout;
    options.environment = [](const WorkerPlacement&, const NodeAssignment&, const std::string&) {
      return EnvironmentMap{};
    };
    options.processes = &processes;
  }

  static NodeAssignment FirstRound() {
    NodeAssignment round;
    round.group_world_size = 1;
    round.world_size = 2;
    round.master_addr = "127.0.0.1";
    round.master_port = 1;
    return round;
  }

  int Run() {
    WorkerGroupSupervisor supervisor(io, options);
    return supervisor.Run();
  }

  ScratchDir dir;
  boost::asio::io_context io;
  FakeWorkerProcesses processes;
  LocalCoordinator coordinator;
  SupervisorOptions options;
};

using Events = std::vector<std::string>;

std::string Exited(int code) { return std::to_string(W_EXITCODE(code, 0)); }
std::string Killed(int signal_number) { return std::to_string(W_EXITCODE(0, signal_number)); }

}  // namespace

TEST_CASE("a worker fails while another ignores SIGTERM: SIGKILL after the grace, then a restart") {
  FakeNode node(/*max_restarts=*/1, /*shutdown_timeout=*/20ms, [](int attempt, int rank) {
    FakeBehaviour behaviour;
    if (attempt == 0 && rank == 0) behaviour.exit_code = 1;
    if (attempt == 0 && rank == 1) behaviour.ignores_stop_signals = true;  // hangs on
    if (attempt == 1) behaviour.exit_code = 0;
    return behaviour;
  });
  CHECK(node.Run() == 0);
  CHECK(node.processes.events() == Events{"start 0.0", "start 0.1", "exit 0.0 " + Exited(1),
                                          "SIGTERM 0.1", "SIGKILL 0.1",
                                          "exit 0.1 " + Killed(SIGKILL), "start 1.0", "start 1.1",
                                          "exit 1.0 " + Exited(0), "exit 1.1 " + Exited(0)});
}

TEST_CASE("a failure when the restart budget is gone stops the group and fails with its code") {
  FakeNode node(/*max_restarts=*/0, /*shutdown_timeout=*/1h, [](int, int rank) {
    FakeBehaviour behaviour;
    if (rank == 1) behaviour.exit_code = 3;
    return behaviour;
  });
  CHECK(node.Run() == 3);
  CHECK(node.processes.events() == Events{"start 0.0", "start 0.1", "exit 0.1 " + Exited(3),
                                          "SIGTERM 0.0", "exit 0.0 " + Killed(SIGTERM)});
}

TEST_CASE("a stop signal during a stop is forwarded, a second one kills at once, and no restart") {
  // Rank 1 ignores every stop signal; each one it gets, the user answers with a Ctrl-C to the
  // agent. The grace is an hour: only the second Ctrl-C can bring SIGKILL.
  FakeNode node(/*max_restarts=*/3, /*shutdown_timeout=*/1h, [](int, int rank) {
    FakeBehaviour behaviour;
    if (rank == 0) behaviour.exit_code = 1;
    if (rank == 1) {
      behaviour.ignores_stop_signals = true;
      behaviour.on_signal = [](int signal_number) {
        if (signal_number != SIGKILL) ::kill(::getpid(), SIGINT);
      };
    }
    return behaviour;
  });
  CHECK(node.Run() == 128 + SIGINT);
  CHECK(node.processes.events() == Events{"start 0.0", "start 0.1", "exit 0.0 " + Exited(1),
                                          "SIGTERM 0.1", "SIGINT 0.1", "SIGKILL 0.1",
                                          "exit 0.1 " + Killed(SIGKILL)});
}

TEST_CASE("a stop signal the agent got before a restart's news is carried out first, alone") {
  // Rank 0 fails; the restart it earns is posted to the loop, then the agent gets SIGTERM while
  // it stops rank 1 (as when every agent of a job is stopped at once): the signal came first, so
  // the node stops for it, and says nothing of a restart it will not make.
  FakeNode node(/*max_restarts=*/3, /*shutdown_timeout=*/1h, [](int, int rank) {
    FakeBehaviour behaviour;
    if (rank == 0) behaviour.exit_code = 1;
    if (rank == 1) {
      // Once: raise is this thread's signal, handled before it returns.
      behaviour.on_signal = [raised = std::make_shared<bool>(false)](int signal_number) {
        if (signal_number == SIGTERM && !*raised) ::raise(SIGTERM);
        *raised = true;
      };
    }
    return behaviour;
  });
  std::ostringstream said;
  auto log = GetLogger("agent");
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(said);
  log->sinks().push_back(sink);
  const int status = node.Run();
  log->sinks().pop_back();
  CHECK(status == 128 + SIGTERM);
  INFO(said.str());
  CHECK(said.str().find("received SIGTERM; stopping the workers") != std::string::npos);
  CHECK(said.str().find("restarting the workers") == std::string::npos);
  CHECK(node.processes.events() == Events{"start 0.0", "start 0.1", "exit 0.0 " + Exited(1),
                                          "SIGTERM 0.1",
                                          "SIGTERM 0.1",  // the failure's, the agent's
                                          "exit 0.1 " + Killed(SIGTERM)});
}
