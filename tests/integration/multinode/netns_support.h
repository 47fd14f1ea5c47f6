// Multi-node tests in network namespaces: a network (or a skip saying why there is none here),
// a token-protected daemon on the switch's address, and agents each in its own node namespace.
#pragma once

#include "multinode_support.h"
#include "support/skip.h"
#include "test_network.h"

namespace ddprun::testing {

// A network of `nodes` namespaces, or nullopt after SkipTest saying why there is none.
inline std::optional<TestNetwork> NetworkOrSkip(int nodes) {
  std::string reason;
  auto network = TestNetwork::Create(nodes, reason);
  if (!network) SkipTest("cannot create network namespaces: " + reason);
  return network;
}

// The flags of an agent of job `id` (`nproc` workers) with quick timeouts, then `program`.
inline std::vector<std::string> Agent(const std::string& endpoint, const std::string& id,
                                      const std::string& nnodes, const std::string& token_file,
                                      std::vector<std::string> program, int nproc = 1) {
  std::vector<std::string> args = {
      "--nnodes=" + nnodes,          "--nproc_per_node=" + std::to_string(nproc),
      "--rdzv_endpoint=" + endpoint, "--rdzv_id=" + id,
      "--token-file=" + token_file,  QuickRendezvousFlag(30)};
  args.insert(args.end(), program.begin(), program.end());
  return args;
}

// A test network with a token-protected daemon on the switch's address.
struct DaemonOnNetwork {
  TestNetwork network;
  ScratchDir dir;
  std::string token_file = dir / "token";
  std::unique_ptr<Daemon> daemon;
  std::string endpoint;

  // `extra`: more of the daemon's flags.
  explicit DaemonOnNetwork(TestNetwork created, const std::vector<std::string>& extra = {})
      : network(std::move(created)) {
    WriteFile(token_file, "netns-token\n");
    std::vector<std::string> flags = {"--bind=0.0.0.0", "--token-file=" + token_file};
    flags.insert(flags.end(), extra.begin(), extra.end());
    daemon = std::make_unique<Daemon>(flags, network.In(-1));
    endpoint = daemon->endpoint(TestNetwork::switch_address());
  }

  // `count` agents of job `id`, agent i in node i's namespace, running `program` (`nproc`
  // workers each); `prefix` goes between the namespace and ddprun (an `env` setting variables).
  std::vector<std::unique_ptr<ChildProcess>> StartAgents(
      int count, const std::string& id, const std::string& nnodes,
      const std::vector<std::string>& program, int nproc = 1,
      const std::vector<std::string>& prefix = {}) {
    std::vector<std::unique_ptr<ChildProcess>> agents;
    for (int i = 0; i < count; ++i) {
      std::vector<std::string> in = network.In(i);
      in.insert(in.end(), prefix.begin(), prefix.end());
      agents.push_back(StartAgent(Agent(endpoint, id, nnodes, token_file, program, nproc), in));
    }
    return agents;
  }
};

}  // namespace ddprun::testing
