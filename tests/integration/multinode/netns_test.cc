// Multi-node jobs across network namespaces: each agent on its own address, the daemon on the
// switch's, so nothing can pass through loopback. Skipped, with the reason, where namespaces
// cannot be made (not root, no iproute2).
#include <filesystem>
#include <fstream>
#include <regex>

#include "netns_support.h"
#include "support/test_paths.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {
const std::string kCollectivesWorker = paths::kCollectivesWorker;
}  // namespace

TEST_CASE("two nodes in their own network namespaces form one world over their own addresses") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  const std::string& endpoint = job.endpoint;
  auto agents = job.StartAgents(2, "ns2", "2", {kTestWorker, "env"});
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  std::map<std::string, std::string> master_of_rank;
  for (int i = 0; i < 2; ++i) {
    INFO(agents[i]->stdout_text() << agents[i]->stderr_text());
    for (int rank = 0; rank < 2; ++rank) {
      auto env = RankVariables(agents[i]->stdout_text(), rank);
      if (env.empty()) continue;
      CHECK(env["WORLD_SIZE"] == "2");
      CHECK(env["DDPRUN_STORE_ADDR"] == endpoint);
      master_of_rank[std::to_string(rank)] = env["MASTER_ADDR"];
      // Rank 0 runs on the node whose address is MASTER_ADDR.
      if (rank == 0) CHECK(env["MASTER_ADDR"] == TestNetwork::address(i));
    }
  }
  REQUIRE(master_of_rank.size() == 2);
  CHECK(master_of_rank["0"] == master_of_rank["1"]);
}

TEST_CASE("a node whose link is cut is declared lost and the others go on without it") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  auto agents = job.StartAgents(3, "cut", "2:3", {kTestWorker, "until-world", "2"});
  for (auto& agent : agents) REQUIRE(AwaitLines(*agent, "ready world=3", 1));
  REQUIRE(job.network.Cut(2));
  CHECK(ExitCode(*agents[0]) == 0);
  CHECK(ExitCode(*agents[1]) == 0);
  for (int i = 0; i < 2; ++i) {
    INFO(agents[i]->stdout_text() << agents[i]->stderr_text());
    CHECK(Count(agents[i]->stdout_text(), "ready world=2 restart=0") == 1);
    CHECK(Count(agents[i]->stderr_text(), "node " + TestNetwork::address(2) + " lost") == 1);
  }
  // The cut-off agent is still trying to reach the server; the test ends it (and its worker).
}

TEST_CASE(
    "one daemon's metrics, scraped in the switch's namespace, count the node of three whose link "
    "is cut, and the time it took to find it lost") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network), {"--metrics-port=0", "--metrics-bind=0.0.0.0"});
  auto agents = job.StartAgents(3, "scraped", "2:3", {kTestWorker, "until-world", "2"});
  for (auto& agent : agents) REQUIRE(AwaitLines(*agent, "ready world=3", 1));
  REQUIRE(job.network.Cut(2));
  CHECK(ExitCode(*agents[0]) == 0);
  CHECK(ExitCode(*agents[1]) == 0);
  // As Prometheus on the switch's network would: the token as a bearer token.
  const std::string url = "http://" + TestNetwork::switch_address() + ":" +
                          std::to_string(job.daemon->metrics_port()) + "/metrics";
  std::vector<std::string> scrape = job.network.In(-1);
  scrape.insert(scrape.end(),
                {"python3", "-c",
                 "import sys, urllib.request\n"
                 "request = urllib.request.Request(sys.argv[1], headers={'Authorization': "
                 "'Bearer netns-token'})\n"
                 "print(urllib.request.urlopen(request, timeout=30).read().decode(), end='')",
                 url});
  auto page = Run(scrape, {}, 60s);
  INFO(page.out << page.err);
  REQUIRE(page.code() == 0);
  CHECK(Count(page.out, "\nddprun_job_nodes_lost_total{job=\"scraped\"} 1\n") == 1);
  CHECK(Count(page.out, "\nddprun_lost_node_detection_seconds_count{job=\"scraped\"} 1\n") == 1);
  // Found lost after its heartbeat timeout, at most a heartbeat timeout more.
  CHECK(std::regex_search(
      page.out, std::regex(R"(\nddprun_lost_node_detection_seconds_bucket\{job="scraped",)"
                           R"(le="0\.5"\} 0\n)")));
  CHECK(Count(page.out, "\nddprun_job_rounds_total{job=\"scraped\"} 2\n") == 1);
  CHECK(Count(page.out, "\nddprun_job_restarts_total{job=\"scraped\"} 0\n") == 1);
  CHECK(Count(page.out, "\nddprun_jobs{state=\"complete\"} 1\n") == 1);
}

TEST_CASE("the agent on the endpoint's address hosts the rendezvous for three namespaces") {
  auto network = NetworkOrSkip(3);
  if (!network) return;
  ScratchDir dir;
  WriteFile(dir / "token", "netns-token\n");
  const std::string endpoint = TestNetwork::address(0) + ":29400";
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(StartAgent(
        Agent(endpoint, "hosted3", "3", dir / "token", {kTestWorker, "env"}), network->In(i)));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  std::set<std::string> ranks;
  for (auto& agent : agents) {
    INFO(agent->stdout_text() << agent->stderr_text());
    for (int rank = 0; rank < 3; ++rank) {
      auto env = RankVariables(agent->stdout_text(), rank);
      if (env.empty()) continue;
      ranks.insert(env["RANK"]);
      CHECK(env["WORLD_SIZE"] == "3");
      CHECK(env["DDPRUN_STORE_ADDR"] == endpoint);
    }
  }
  CHECK(ranks.size() == 3);
}

TEST_CASE("across namespaces a worker failure on one node restarts both, counted job-wide") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  // fail-once: rank 1 fails in the first round once every other rank is ready (through the
  // store on the daemon); then every rank of both nodes runs again with the job-wide count 1.
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(StartAgent(Agent(job.endpoint, "nsfail", "2", job.token_file,
                                      {"--max_restarts=1", kTestWorker, "fail-once", "7"}),
                                job.network.In(i)));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  std::string all;
  for (auto& agent : agents) all += agent->stdout_text();
  INFO(all);
  for (int rank = 0; rank < 2; ++rank) {
    auto lines = RankLines(all, rank);
    CHECK(std::count(lines.begin(), lines.end(), "started attempt 1") == 1);
  }
  auto status = RunStatus(
      {"--rdzv_endpoint=" + job.endpoint, "--rdzv_id=nsfail", "--token-file=" + job.token_file},
      job.network.In(0));
  INFO(status.out << status.err);
  CHECK(Count(status.out, "job nsfail: complete, round 1, restarts 1 of 1, nodes 2") == 1);
  CHECK(Count(status.out,
              "last failure: rank 1 (local_rank 0) on host " + ThisHostName() + " (10.77.0.") == 1);
}

TEST_CASE(
    "across namespaces the server names the rank hung on the other node, that node "
    "collects its stacks, and the job restarts and completes") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  ScratchDir logs;  // the stacks are kept: here, not in a temporary directory of their own
  // Global rank 3 (local 1 of the second node) blocks in its own code at step 100 while the
  // other three wait in that step's all_reduce.
  auto agents = job.StartAgents(
      2, "hang2", "2",
      {"--hang_timeout=2", "--hang_first_timeout=30", "--max_restarts=1",
       "--log_dir=" + logs.path(), kCollectivesWorker, "train", "200", "pause", "3", "10"},
      2);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  int holder = -1;  // the node that ran rank 3
  for (int i = 0; i < 2; ++i) {
    if (Count(agents[i]->stdout_text(), "[rank3]: rank stuck in StuckInUserCode") == 1) holder = i;
  }
  REQUIRE(holder >= 0);
  const std::string named =
      "hang: rank 3 (" + TestNetwork::address(holder) + ", local 1) at step 99 for ";
  for (int i = 0; i < 2; ++i) {
    INFO(agents[i]->stdout_text() << agents[i]->stderr_text());
    // The same finding reaches both nodes.
    CHECK(Count(agents[i]->stderr_text(), named) == 1);
    CHECK(Count(agents[i]->stderr_text(),
                "the other 3 ranks at step 99, waiting in a collective") == 1);
    CHECK(Count(agents[i]->stdout_text(), "done 200 steps") == 2);
    CHECK(Count(agents[i]->stderr_text(), "(restart 1 of 1)") == 1);
  }
  // Only the holder collects: the stacks of its own hung rank.
  CHECK(Count(agents[holder]->stderr_text(), "collecting the stacks of 1 hung worker(s)") == 1);
  CHECK(Count(agents[1 - holder]->stderr_text(), "collecting the stacks") == 0);
  CHECK(Count(agents[holder]->stderr_text(), "ddprun: stacks of rank 3: ") == 1);
}

TEST_CASE("with hang detection on, ddprun status shows each rank's last progress and its age") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  auto agents =
      job.StartAgents(2, "progress2", "2",
                      {"--hang_timeout=5", kCollectivesWorker, "train", "150", "none", "0", "40"});
  const std::vector<std::string> status = {"--rdzv_endpoint=" + job.endpoint,
                                           "--token-file=" + job.token_file, "--rdzv_id=progress2"};
  auto [shown, text] = AwaitStatus(
      status,
      [](const std::string& out) {
        return Count(out, "COLLECTIVES") == 1 && Count(out, " s ago") >= 4 &&
               std::regex_search(out, std::regex(R"(\n  1 +10\.[0-9.]+ +[0-9]+ +[0-9]+ +)"
                                                 R"((-|[0-9.]+ ms) +[0-9.]+ s ago)"));
      },
      job.network.In(-1));
  INFO(text);
  CHECK(shown);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
}

TEST_CASE(
    "across namespaces the server names a rank whose steps are slow, on its node's console, and "
    "ddprun status marks it") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  DaemonOnNetwork job(std::move(*network));
  // Global rank 3 (local 1 of one node) takes 120 ms of its own a step, the others 40.
  auto agents = job.StartAgents(
      2, "slow2", "2",
      {"--straggler_ratio=1.5", kCollectivesWorker, "train", "80", "slow", "3", "40"}, 2);
  const std::vector<std::string> status = {"--rdzv_endpoint=" + job.endpoint,
                                           "--token-file=" + job.token_file, "--rdzv_id=slow2"};
  auto [shown, text] = AwaitStatus(
      status,
      [](const std::string& out) {
        return std::regex_search(out, std::regex(R"(\n  3 +10\.[0-9.]+ +[0-9]+ +[0-9]+ +)"
                                                 R"([0-9.]+ ms, straggler +[0-9.]+ s ago)"));
      },
      job.network.In(-1));
  INFO(text);
  CHECK(shown);
  CHECK(Count(text, ", straggler") == 1);
  int holder = -1;  // the node that ran rank 3
  for (int i = 0; i < 2; ++i) {
    INFO(agents[i]->stdout_text() << agents[i]->stderr_text());
    CHECK(ExitCode(*agents[i]) == 0);
    if (Count(agents[i]->stderr_text(),
              "ddprun: straggler: rank 3 (" + TestNetwork::address(i) + ", local 1): ") == 1) {
      holder = i;
    }
  }
  REQUIRE(holder >= 0);
  CHECK(Count(agents[1 - holder]->stderr_text(), "straggler") == 0);
  CHECK(Count(agents[holder]->stderr_text(), "straggler:") == 1);
}

namespace {

// What a pod's DNS says, for each node namespace: /etc/netns/<namespace>/hosts, which
// `ip netns exec` mounts over /etc/hosts. Removed with the object.
class PodNames {
 public:
  PodNames(const TestNetwork& network, int nodes, const std::string& hosts)
      : made_parent_(!std::filesystem::exists(kParent)) {
    for (int i = 0; i < nodes; ++i) {
      const std::string dir = std::string(kParent) + "/" + network.node_name(i);
      std::filesystem::create_directories(dir);
      std::ofstream(dir + "/hosts") << "127.0.0.1 localhost\n" << hosts;
      dirs_.push_back(dir);
    }
  }
  ~PodNames() {
    for (const auto& dir : dirs_) std::filesystem::remove_all(dir);
    std::error_code ignored;
    if (made_parent_) std::filesystem::remove(kParent, ignored);
  }

 private:
  static constexpr const char* kParent = "/etc/netns";
  const bool made_parent_;
  std::vector<std::string> dirs_;
};

}  // namespace

TEST_CASE("two PyTorchJob pods, given the operator's environment, form torchrun's world") {
  auto network = NetworkOrSkip(2);
  if (!network) return;
  const PodNames names(
      *network, 2,
      TestNetwork::address(0) + " demo-master-0\n" + TestNetwork::address(1) + " demo-worker-0\n");
  // training-operator v1.9, PyTorchJob "demo": a Master and a Worker, nprocPerNode "2", port
  // 23456 (pkg/controller.v1/pytorch/envvar.go and master.go), as the pods get it.
  auto pod = [&](int node_rank) {
    return std::vector<std::string>{"env",
                                    "PYTHONUNBUFFERED=1",
                                    "MASTER_PORT=23456",
                                    "PET_MASTER_PORT=23456",
                                    "MASTER_ADDR=demo-master-0",
                                    "PET_MASTER_ADDR=demo-master-0",
                                    "WORLD_SIZE=4",
                                    "RANK=" + std::to_string(node_rank),
                                    "PET_NODE_RANK=" + std::to_string(node_rank),
                                    "PET_NPROC_PER_NODE=2",
                                    "PET_NNODES=2"};
  };
  // The worker pod starts first; whichever pod joins first, ranks follow the node ranks (that
  // the order of joining does not matter is the rendezvous's unit test).
  std::vector<std::unique_ptr<ChildProcess>> pods(2);
  for (int node_rank : {1, 0}) {
    auto prefix = network->In(node_rank);
    auto env = pod(node_rank);
    prefix.insert(prefix.end(), env.begin(), env.end());
    pods[node_rank] = StartAgent({kTestWorker, "env"}, prefix);
  }
  for (int node_rank = 0; node_rank < 2; ++node_rank) {
    INFO(pods[node_rank]->stdout_text() << pods[node_rank]->stderr_text());
    REQUIRE(ExitCode(*pods[node_rank]) == 0);
    for (int local = 0; local < 2; ++local) {
      const int rank = node_rank * 2 + local;  // torchrun's static rendezvous: node rank order
      auto env = RankVariables(pods[node_rank]->stdout_text(), rank);
      CHECK(env["RANK"] == std::to_string(rank));
      CHECK(env["LOCAL_RANK"] == std::to_string(local));
      CHECK(env["GROUP_RANK"] == std::to_string(node_rank));
      CHECK(env["WORLD_SIZE"] == "4");
      CHECK(env["MASTER_ADDR"] == TestNetwork::address(0));
    }
  }
}
