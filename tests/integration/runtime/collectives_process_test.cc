// The collectives with ranks as real processes: under ddprun (one node and two), and started by
// the test to kill one in the middle of a collective.
#include <algorithm>
#include <catch2/catch.hpp>

#include "ddprun/rendezvous/rendezvous_server.h"
#include "integration/launcher/launcher_test_support.h"
#include "integration/multinode/multinode_support.h"
#include "support/test_paths.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

const std::string kCollectivesWorker = paths::kCollectivesWorker;

// The "ok <n> checks <fingerprint>" lines of every rank; empty when any rank failed.
std::vector<std::string> OkLines(const std::string& output, int world) {
  std::vector<std::string> oks;
  for (int rank = 0; rank < world; ++rank) {
    for (const auto& line : RankLines(output, rank)) {
      if (line.rfind("ok ", 0) == 0) oks.push_back(line);
    }
  }
  return oks;
}

// The environment ddprun would give rank `rank` of `world`, for a store at `address`.
std::map<std::string, std::string> WorkerEnv(const std::string& address, int rank, int world,
                                             const std::string& transport) {
  return {{"RANK", std::to_string(rank)},
          {"WORLD_SIZE", std::to_string(world)},
          {"LOCAL_RANK", std::to_string(rank)},
          {"LOCAL_WORLD_SIZE", std::to_string(world)},
          {"GROUP_RANK", "0"},
          {"TORCHELASTIC_RESTART_COUNT", "0"},
          {"MASTER_ADDR", "127.0.0.1"},
          {"MASTER_PORT", "29500"},
          {"DDPRUN_STORE_ADDR", address},
          {"DDPRUN_TOKEN", "procs"},
          {"DDPRUN_JOB_ID", "die-" + transport},
          {"DDPRUN_ROUND", "0"},
          {"DDPRUN_CPU_TRANSPORT", transport}};
}

}  // namespace

TEST_CASE("under ddprun, 4 ranks as processes run every collective right and bit-identical") {
  const std::string transport = GENERATE(as<std::string>{}, "auto", "tcp");
  INFO("DDPRUN_CPU_TRANSPORT=" << transport);
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=4", kCollectivesWorker, "check"}),
                    {{"DDPRUN_CPU_TRANSPORT", transport}}, 120s);
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  auto oks = OkLines(result.out, 4);
  REQUIRE(oks.size() == 4);
  for (const auto& ok : oks) CHECK(ok == oks[0]);
}

TEST_CASE("under ddprun, 4 ranks as processes read each other's registered buffers directly") {
  const std::string transport = GENERATE(as<std::string>{}, "auto", "tcp");
  INFO("DDPRUN_CPU_TRANSPORT=" << transport);
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=4", kCollectivesWorker, "check", "registered"}),
          {{"DDPRUN_CPU_TRANSPORT", transport}}, 120s);
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  auto oks = OkLines(result.out, 4);
  REQUIRE(oks.size() == 4);
  for (const auto& ok : oks) {
    CHECK(ok == oks[0]);
    CHECK(ok.ends_with(transport == "auto" ? " direct" : " ordinary"));
  }
}

TEST_CASE(
    "a rank that cannot map its peers' registered buffers makes every rank use ordinary memory, "
    "and says why") {
  // Rank 1, not rank 0: every rank's verdict must count every rank's failure.
  auto result = Run(
      Ddprun({"--standalone", "--nproc_per_node=3", kCollectivesWorker, "starved", "1"}), {}, 120s);
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  for (int rank = 0; rank < 3; ++rank) {
    INFO("rank " << rank);
    auto lines = RankLines(result.out, rank);
    CHECK(std::count(lines.begin(), lines.end(), "ordinary sum 6") == 1);
  }
  CHECK(Count(result.out + result.err,
              "rank 1: a registered buffer of 268435456 bytes is ordinary memory: ") == 1);
}

TEST_CASE("two ddprun nodes of two ranks each form one ring of four") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(
        StartAgent({"--nnodes=2", "--nproc_per_node=2", "--rdzv_endpoint=" + daemon.endpoint(),
                    "--rdzv_id=ring4", kCollectivesWorker, "check"}));
  }
  std::string all;
  for (auto& agent : agents) {
    CHECK(ExitCode(*agent) == 0);
    all += agent->stdout_text();
  }
  INFO(all);
  auto oks = OkLines(all, 4);
  REQUIRE(oks.size() == 4);
  for (const auto& ok : oks) CHECK(ok == oks[0]);
}

TEST_CASE("a rank killed in the middle of a collective makes the others fail at once") {
  const std::string transport = GENERATE(as<std::string>{}, "auto", "tcp");
  const bool registered = GENERATE(false, true);  // over shm: the direct path
  INFO("DDPRUN_CPU_TRANSPORT=" << transport << (registered ? ", registered buffer" : ""));
  RendezvousServerOptions options;
  options.token = "procs";
  auto server = RendezvousServer::Start(options).value();
  std::vector<std::unique_ptr<ChildProcess>> ranks;
  for (int rank = 0; rank < 3; ++rank) {
    auto env = WorkerEnv(server->address(), rank, 3, transport);
    env["DDPRUN_JOB_ID"] += registered ? "-registered" : "";
    env["DDPRUN_TIMEOUT"] = "600";  // the failure must be noticed, not timed out
    ranks.push_back(std::make_unique<ChildProcess>(
        std::vector<std::string>{kCollectivesWorker, "die", "1", registered ? "registered" : ""},
        env));
  }
  auto victim = ranks[1]->Wait(60s);
  REQUIRE(victim.has_value());
  CHECK(victim->term_signal == SIGKILL);
  for (int rank : {0, 2}) {
    CHECK(ExitCode(*ranks[static_cast<size_t>(rank)]) == 3);
    INFO(ranks[static_cast<size_t>(rank)]->stdout_text());
    CHECK(Count(ranks[static_cast<size_t>(rank)]->stdout_text(), "failed after") == 1);
    if (registered) {
      CHECK(Count(ranks[static_cast<size_t>(rank)]->stdout_text(),
                  transport == "auto" ? "direct" : "ordinary") == 1);
    }
  }
}

TEST_CASE("a worker without ddprun's environment, or with a wrong store, says so clearly") {
  auto bare = Run({kCollectivesWorker, "init"}, {{"RANK", "\x01"}});
  CHECK(bare.code() == 2);
  CHECK(bare.out == "error: RANK is not set; run this program under ddprun\n");

  auto env = WorkerEnv("127.0.0.1:1", 0, 2, "auto");
  env["DDPRUN_STORE_RETRY"] = "0.3";
  auto lost = Run({kCollectivesWorker, "init"}, env, 60s);
  CHECK(lost.code() == 2);
  INFO(lost.out);
  CHECK(lost.out.rfind("error: rank 0 could not connect the CPU ring: ", 0) == 0);
  CHECK(Lines(lost.out).size() == 1);
  CHECK(Count(lost.out, "127.0.0.1:1") >= 1);

  env = WorkerEnv("127.0.0.1:1", 0, 2, "carrier-pigeon");
  auto bad = Run({kCollectivesWorker, "init"}, env);
  CHECK(bad.code() == 2);
  CHECK(bad.out == "error: DDPRUN_CPU_TRANSPORT must be auto or tcp, not 'carrier-pigeon'\n");
}
