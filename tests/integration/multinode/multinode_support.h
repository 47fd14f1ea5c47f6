// Helpers of the multi-node integration tests: a real ddprund daemon, real ddprun agents, and
// the status command, all as processes on loopback (or in network namespaces).
#pragma once

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "integration/launcher/launcher_test_support.h"
#include "support/child_process.h"
#include "support/test_paths.h"
#include "support/timing_profile.h"

namespace ddprun::testing {

inline const std::string kDdprund = paths::kDdprund;

// The daemon, started on a free port (or the given one) and stopped with the test.
class Daemon {
 public:
  // `prefix`: a command the daemon runs under (for example {"ip", "netns", "exec", "ns"}).
  explicit Daemon(std::vector<std::string> extra_args = {}, std::vector<std::string> prefix = {},
                  int port = 0)
      : extra_args_(std::move(extra_args)), prefix_(std::move(prefix)) {
    Start(port);
  }

  void Start(int port) {
    std::vector<std::string> argv = prefix_;
    argv.push_back(kDdprund);
    argv.push_back("--port=" + std::to_string(port));
    argv.insert(argv.end(), extra_args_.begin(), extra_args_.end());
    process_ = std::make_unique<ChildProcess>(
        argv, std::map<std::string, std::string>{{"DDPRUN_LOG_LEVEL", "info"}});
    auto line = process_->WaitForStdoutLine(
        [](const std::string& l) { return l.rfind("ddprund listening on ", 0) == 0; });
    INFO(process_->stderr_text());
    REQUIRE(line.has_value());
    host_port_ = line->substr(std::string("ddprund listening on ").size());
    port_ = std::stoi(host_port_.substr(host_port_.rfind(':') + 1));
    // With --metrics-port, said on the line before.
    const std::string text = process_->stdout_text();
    const std::string metrics = "ddprund metrics on ";  // http:// or https://
    if (size_t at = text.find(metrics); at != std::string::npos) {
      const size_t host = text.find("://", at) + 3;
      metrics_port_ = std::stoi(text.substr(text.find(':', host) + 1));
    }
  }

  // SIGKILL, as a crash would; then a new daemon on the same port.
  void Restart() {
    process_->Signal(SIGKILL);
    REQUIRE(process_->Wait(10s).has_value());
    Start(port_);
  }

  std::string endpoint(const std::string& host = "127.0.0.1") const {
    return host + ":" + std::to_string(port_);
  }
  ChildProcess& process() { return *process_; }
  // The HTTP endpoint's port (--metrics-port); -1 without one.
  int metrics_port() const { return metrics_port_; }

 private:
  std::vector<std::string> extra_args_;
  std::vector<std::string> prefix_;
  std::unique_ptr<ChildProcess> process_;
  std::string host_port_;
  int metrics_port_ = -1;
  int port_ = 0;
};

// Where the first agent of a test hosts the rendezvous: an address of this test process's own
// on the loopback network (all of 127.0.0.0/8 is loopback; the pid picks the address, so no two
// tests share it) and a port below the kernel's ephemeral range, which no bind to port 0 is ever
// given. So no other socket can take it between now and the agent's bind, unlike a port probed
// free and closed.
inline std::string UnsharedLoopbackEndpoint() {
  static int endpoints = 0;
  const auto pid = static_cast<unsigned>(::getpid());  // at most 2^22
  const std::string address = "127." + std::to_string(100 + (pid >> 16)) + "." +
                              std::to_string((pid >> 8) & 255) + "." + std::to_string(pid & 255);
  return address + ":" + std::to_string(21000 + endpoints++);
}

// One ddprun agent of a job.
inline std::unique_ptr<ChildProcess> StartAgent(const std::vector<std::string>& args,
                                                const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> argv = prefix;
  argv.push_back(kDdprun);
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<ChildProcess>(argv);
}

// `ddprun status` with `args`; its result.
inline RunResult RunStatus(const std::vector<std::string>& args,
                           const std::vector<std::string>& prefix = {}) {
  std::vector<std::string> argv = prefix;
  argv.push_back(kDdprun);
  argv.push_back("status");
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, {}, 30s);
}

// Asks `ddprun status` with `args` until `ready` holds of its output or `within` has passed,
// pausing a little between answers (one takes only a few milliseconds, and what is awaited, such
// as a lease running out, takes seconds). The last output, and whether `ready` held.
inline std::pair<bool, std::string> AwaitStatus(
    const std::vector<std::string>& args, const std::function<bool(const std::string&)>& ready,
    const std::vector<std::string>& prefix = {}, std::chrono::milliseconds within = 60s) {
  const auto deadline = std::chrono::steady_clock::now() + within;
  std::string last;
  do {
    auto result = RunStatus(args, prefix);
    last = result.out + result.err;
    if (result.code() == 0 && ready(result.out)) return {true, last};
    std::this_thread::sleep_for(20ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return {false, last};
}

// Waits for `count` lines containing `needle` on the agent's stdout.
inline bool AwaitLines(ChildProcess& agent, const std::string& needle, size_t count,
                       std::chrono::milliseconds timeout = 60s) {
  auto line = agent.WaitForStdoutLine(
      [&](const std::string&) { return Count(agent.stdout_text(), needle) >= count; }, timeout);
  return line.has_value();
}

// The agent's exit code once it has exited (-1: killed by a signal, or still running after 60 s).
inline int ExitCode(ChildProcess& agent) {
  auto exit = agent.Wait(60s);
  return exit && exit->exit_code ? *exit->exit_code : -1;
}

// The pid of each agent's one worker (test_worker wait-for-signal says "]: ready PID"), once
// every agent's has said it.
inline std::vector<pid_t> AwaitReadyWorkers(
    const std::vector<std::unique_ptr<ChildProcess>>& agents) {
  std::vector<pid_t> workers;
  for (const auto& agent : agents) {
    auto line = agent->WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    INFO(agent->stderr_text());
    REQUIRE(line.has_value());
    workers.push_back(std::stoi(line->substr(line->rfind(' ') + 1)));
  }
  return workers;
}

// Ends `workers` (AwaitReadyWorkers'): each agent exits 0, having started its worker once.
inline void EndWorkersStartedOnce(const std::vector<std::unique_ptr<ChildProcess>>& agents,
                                  const std::vector<pid_t>& workers) {
  for (pid_t worker : workers) ::kill(worker, SIGTERM);
  for (const auto& agent : agents) {
    CHECK(ExitCode(*agent) == 0);
    INFO(agent->stdout_text() + agent->stderr_text());
    CHECK(Count(agent->stdout_text(), "]: ready ") == 1);
  }
}

// `ddprun status --json` shows one job with its two nodes, all running round 0.
inline bool TwoNodesInRoundZero(const std::string& status_json) {
  return Count(status_json, "\"state\": \"running\"") == 3 &&
         Count(status_json, "\"round\": 0") == 1;
}

inline void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

}  // namespace ddprun::testing
