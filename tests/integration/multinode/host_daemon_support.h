// Jobs submitted to host daemons, across network namespaces: one ddprund per node namespace (on
// 0.0.0.0:29400 there, with a token, running jobs as root as the tests do), and the submitter in
// the switch's namespace, which reaches every node's address.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <thread>

#include "netns_support.h"

namespace ddprun::testing {

// The hosts of a test network, one daemon each.
struct HostDaemons {
  TestNetwork network;
  ScratchDir dir;
  std::string token_file = dir / "token";
  std::vector<std::unique_ptr<Daemon>> daemons;
  // Goes between the switch's namespace and the submitter (an `env` setting PATH).
  std::vector<std::string> submitter_prefix;

  // `prefixes[i]`, when given, goes between node i's namespace and ddprund (unshare, a mount).
  explicit HostDaemons(TestNetwork created, int hosts,
                       std::map<int, std::vector<std::string>> prefixes = {})
      : network(std::move(created)) {
    WriteFile(token_file, "hosts-token\n");
    for (int i = 0; i < hosts; ++i) {
      std::vector<std::string> in = network.In(i);
      in.insert(in.end(), prefixes[i].begin(), prefixes[i].end());
      daemons.push_back(std::make_unique<Daemon>(
          std::vector<std::string>{"--bind=0.0.0.0", "--token-file=" + token_file,
                                   "--allow-root-jobs", "--agent-program=" + kDdprun},
          in, 29400));
    }
  }

  // "10.77.0.1,10.77.0.2,..." (the daemons' default port).
  std::string hosts() const {
    std::string list;
    for (size_t i = 0; i < daemons.size(); ++i) {
      list += (i ? "," : "") + TestNetwork::address(static_cast<int>(i));
    }
    return list;
  }

  // `ddprun ARGS` in the switch's namespace with this network's token (or `token_file_used`), in
  // `working_dir` (or the test's), started.
  std::unique_ptr<ChildProcess> Submitter(const std::vector<std::string>& args,
                                          const std::string& token_file_used = "",
                                          const std::string& working_dir = "") const {
    std::vector<std::string> argv = network.In(-1);
    argv.insert(argv.end(), submitter_prefix.begin(), submitter_prefix.end());
    if (!working_dir.empty()) argv.insert(argv.end(), {"/usr/bin/env", "-C", working_dir});
    argv.push_back(kDdprun);
    argv.push_back("--token-file=" + (token_file_used.empty() ? token_file : token_file_used));
    argv.insert(argv.end(), args.begin(), args.end());
    return std::make_unique<ChildProcess>(argv);
  }

  // `ddprun COMMAND ARGS` (attach, logs, cancel, status) asking node 0's daemon unless ARGS name
  // another (--host=), run to its end.
  RunResult Command(const std::string& command, std::vector<std::string> args) const {
    std::vector<std::string> argv = network.In(-1);
    argv.insert(argv.end(), {kDdprun, command});
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--token-file=" + token_file);
    const bool host_given = std::any_of(args.begin(), args.end(), [](const std::string& arg) {
      return arg.rfind("--host=", 0) == 0;
    });
    if (!host_given) argv.push_back("--host=" + TestNetwork::address(0));
    return Run(argv, {}, 120s);
  }
};

// The submitter's arguments: every host, quick rendezvous timeouts, `options`, then `program`.
inline std::vector<std::string> SubmitArgs(const HostDaemons& hosts,
                                           std::vector<std::string> options,
                                           const std::vector<std::string>& program) {
  std::vector<std::string> args = {"--hosts=" + hosts.hosts(), QuickRendezvousFlag(5)};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), program.begin(), program.end());
  return args;
}

// The processes whose command line mentions `marker`, each with the name of its network
// namespace's inode ("net:[4026532...]").
inline std::vector<std::pair<pid_t, std::string>> ProcessesMentioning(const std::string& marker) {
  std::vector<std::pair<pid_t, std::string>> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (dirent* entry = ::readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0 || pid == ::getpid()) continue;
    std::string cmdline = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmdline.find(marker) == std::string::npos) continue;
    char link[128] = {};
    const std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
    const ssize_t n = ::readlink(ns.c_str(), link, sizeof(link) - 1);
    found.emplace_back(pid, n > 0 ? std::string(link, static_cast<size_t>(n)) : "");
  }
  ::closedir(proc);
  return found;
}

// The "net:[inode]" of node i's namespace.
inline std::string NamespaceOf(const TestNetwork& network, int i) {
  struct stat info {};
  if (::stat(("/run/netns/" + network.node_name(i)).c_str(), &info) != 0) return "?";
  return "net:[" + std::to_string(info.st_ino) + "]";
}

// Waits until at least `count` processes mention `marker`.
inline bool AwaitProcesses(const std::string& marker, size_t count,
                           std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (ProcessesMentioning(marker).size() < count) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// Waits until no process mentions `marker` (in node `node`'s namespace only, when given).
inline bool AwaitNoProcesses(const std::string& marker, const TestNetwork* network = nullptr,
                             int node = -1, std::chrono::milliseconds timeout = 20s) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string ns = network ? NamespaceOf(*network, node) : "";
  while (true) {
    size_t left = 0;
    for (const auto& [pid, net] : ProcessesMentioning(marker)) left += ns.empty() || net == ns;
    if (left == 0) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
}

// SIGINT to a following submitter: it exits 128 + SIGINT, and no process of job `marker` is left.
inline void InterruptSubmitter(ChildProcess& submitter, const std::string& marker) {
  submitter.Signal(SIGINT);
  auto exit = submitter.Wait(60s);
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 128 + SIGINT);
  CHECK(AwaitNoProcesses(marker));
}

}  // namespace ddprun::testing
