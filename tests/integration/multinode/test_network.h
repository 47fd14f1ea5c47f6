// TestNetwork: a private network of network namespaces for multi-node tests, so that each node
// has its own address and a node can be cut off. A "switch" namespace holds a bridge (address
// 10.77.0.254) and each node namespace a veth link to it (10.77.0.<i+1>). Nothing outside these
// namespaces is ever a target. Everything is removed with the object.
#pragma once

#include <unistd.h>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace ddprun::testing {

class TestNetwork {
 public:
  // nullopt (and why in `reason`) when namespaces cannot be made here: not root, no iproute2.
  static std::optional<TestNetwork> Create(int nodes, std::string& reason) {
    if (::geteuid() != 0) {
      reason = "network namespaces need root";
      return std::nullopt;
    }
    if (::access(kIp, X_OK) != 0) {
      reason = std::string(kIp) + " is missing (iproute2)";
      return std::nullopt;
    }
    static std::atomic<int> counter{0};
    TestNetwork network("ddprun-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    const std::string sw = network.switch_name();
    bool ok = network.Ip({"netns", "add", sw}, reason);
    network.created_.push_back(sw);
    ok = ok && network.Ip({"-n", sw, "link", "add", "br0", "type", "bridge"}, reason) &&
         network.Ip({"-n", sw, "addr", "add", "10.77.0.254/24", "dev", "br0"}, reason) &&
         network.Ip({"-n", sw, "link", "set", "br0", "up"}, reason) &&
         network.Ip({"-n", sw, "link", "set", "lo", "up"}, reason);
    for (int i = 0; ok && i < nodes; ++i) {
      const std::string ns = network.node_name(i);
      const std::string port = "p" + std::to_string(i);
      ok = network.Ip({"netns", "add", ns}, reason);
      if (ok) network.created_.push_back(ns);
      ok = ok &&
           network.Ip(
               {"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw},
               reason) &&
           network.Ip({"-n", sw, "link", "set", port, "master", "br0", "up"}, reason) &&
           network.Ip({"-n", ns, "addr", "add", network.address(i) + "/24", "dev", "eth0"},
                      reason) &&
           network.Ip({"-n", ns, "link", "set", "eth0", "up"}, reason) &&
           network.Ip({"-n", ns, "link", "set", "lo", "up"}, reason);
    }
    if (!ok) return std::nullopt;
    return network;
  }

  TestNetwork(TestNetwork&& other) noexcept
      : prefix_(std::move(other.prefix_)), created_(std::move(other.created_)) {
    other.created_.clear();
  }
  ~TestNetwork() {
    std::string ignored;
    for (auto it = created_.rbegin(); it != created_.rend(); ++it)
      Ip({"netns", "del", *it}, ignored);
  }

  std::string switch_name() const { return prefix_ + "-sw"; }
  std::string node_name(int i) const { return prefix_ + "-n" + std::to_string(i); }
  static std::string address(int i) { return "10.77.0." + std::to_string(i + 1); }
  static std::string switch_address() { return "10.77.0.254"; }

  // The command prefix that runs a program in node i's namespace (-1: the switch's).
  std::vector<std::string> In(int i) const {
    return {kIp, "netns", "exec", i < 0 ? switch_name() : node_name(i)};
  }
  // Takes node i off the network: its link goes down, nothing reaches it or leaves it.
  bool Cut(int i) {
    std::string ignored;
    return Ip({"-n", node_name(i), "link", "set", "eth0", "down"}, ignored);
  }
  // Cuts node i off from node j only (a blackhole route each way); both still reach the others.
  bool CutBetween(int i, int j) {
    std::string ignored;
    return Ip({"-n", node_name(i), "route", "add", "blackhole", address(j) + "/32"}, ignored) &&
           Ip({"-n", node_name(j), "route", "add", "blackhole", address(i) + "/32"}, ignored);
  }

 private:
  static constexpr const char* kIp = "/usr/bin/ip";

  explicit TestNetwork(std::string prefix) : prefix_(std::move(prefix)) {}

  bool Ip(std::vector<std::string> args, std::string& reason) const {
    args.insert(args.begin(), kIp);
    auto result = Run(args, {}, 30s);
    if (result.code() != 0) {
      reason = "ip " + args[1] + " ...: " + result.err;
      return false;
    }
    return true;
  }

  std::string prefix_;
  std::vector<std::string> created_;
};

}  // namespace ddprun::testing
