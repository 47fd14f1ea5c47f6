// Multi-node jobs on loopback: several real `ddprun` agents, a real `ddprund` (or the rendezvous
// embedded in an agent), real workers. Every wait is bounded and driven by the processes' output.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <regex>
#include <set>

#include "multinode_support.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

// The flags every agent of job `id` gets: `nnodes` nodes of `nproc` workers, quick timeouts.
std::vector<std::string> JobFlags(const std::string& endpoint, const std::string& id,
                                  const std::string& nnodes, int nproc,
                                  std::vector<std::string> more = {}) {
  std::vector<std::string> flags = {
      "--nnodes=" + nnodes, "--nproc_per_node=" + std::to_string(nproc),
      "--rdzv_endpoint=" + endpoint, "--rdzv_id=" + id, QuickRendezvousFlag(30)};
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

std::vector<std::string> With(std::vector<std::string> flags,
                              const std::vector<std::string>& program) {
  flags.insert(flags.end(), program.begin(), program.end());
  return flags;
}

// Every "[rankN]: KEY=VALUE" of the agents' outputs, by global rank.
std::map<int, std::map<std::string, std::string>> RanksOf(
    const std::vector<std::unique_ptr<ChildProcess>>& agents, int world) {
  std::map<int, std::map<std::string, std::string>> ranks;
  for (const auto& agent : agents) {
    for (int rank = 0; rank < world; ++rank) {
      auto variables = RankVariables(agent->stdout_text(), rank);
      if (!variables.empty()) ranks[rank] = variables;
    }
  }
  return ranks;
}

std::string Outputs(const std::vector<std::unique_ptr<ChildProcess>>& agents) {
  std::string text;
  for (size_t i = 0; i < agents.size(); ++i) {
    text += "---- agent " + std::to_string(i) + " stdout:\n" + agents[i]->stdout_text() +
            "---- agent " + std::to_string(i) + " stderr:\n" + agents[i]->stderr_text();
  }
  return text;
}

}  // namespace

TEST_CASE("two agents form one world of four: ranks, group ranks and one MASTER_PORT") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(
        StartAgent(With(JobFlags(daemon.endpoint(), "two", "2", 2), {kTestWorker, "env"})));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  auto ranks = RanksOf(agents, 4);
  REQUIRE(ranks.size() == 4);
  std::set<std::string> group_ranks;
  for (auto& [rank, env] : ranks) {
    CHECK(env["RANK"] == std::to_string(rank));
    CHECK(env["LOCAL_RANK"] == std::to_string(rank % 2));
    CHECK(env["GROUP_RANK"] == std::to_string(rank / 2));
    CHECK(env["WORLD_SIZE"] == "4");
    CHECK(env["GROUP_WORLD_SIZE"] == "2");
    CHECK(env["LOCAL_WORLD_SIZE"] == "2");
    CHECK(env["MASTER_ADDR"] == "127.0.0.1");
    CHECK(env["MASTER_PORT"] == ranks[0]["MASTER_PORT"]);
    CHECK(env["TORCHELASTIC_RUN_ID"] == "two");
    CHECK(env["DDPRUN_STORE_ADDR"] == daemon.endpoint());
    group_ranks.insert(env["GROUP_RANK"]);
  }
  CHECK(group_ranks.size() == 2);
}

TEST_CASE("three agents form one world and all exit 0") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(
        StartAgent(With(JobFlags(daemon.endpoint(), "three", "3", 1), {kTestWorker, "env"})));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  auto ranks = RanksOf(agents, 3);
  REQUIRE(ranks.size() == 3);
  for (auto& [rank, env] : ranks) CHECK(env["WORLD_SIZE"] == "3");
}

TEST_CASE("a worker failure on one node restarts every node's workers, counted once job-wide") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(
        StartAgent(With(JobFlags(daemon.endpoint(), "restart", "2", 2, {"--max_restarts=1"}),
                        {kTestWorker, "fail-once", "7"})));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  std::string all;
  for (auto& agent : agents) all += agent->stdout_text();
  for (int rank = 0; rank < 4; ++rank) {
    auto lines = RankLines(all, rank);
    CHECK(std::count(lines.begin(), lines.end(), "started attempt 0") == 1);
    CHECK(std::count(lines.begin(), lines.end(), "started attempt 1") == 1);
  }
}

TEST_CASE("when the job-wide budget is spent every node exits with the root cause and names it") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(
        StartAgent(With(JobFlags(daemon.endpoint(), "spent", "2", 2, {"--max_restarts=1"}),
                        {kTestWorker, "exit", "3", "5"})));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 5);
  INFO(Outputs(agents));
  for (auto& agent : agents) {
    CHECK(Count(agent->stderr_text(), "rank 3 (local_rank 1) on host " + ThisHostName() +
                                          " (127.0.0.1): exit code 5") >= 1);
    CHECK(Count(agent->stderr_text(), "\nrestarts used: 1 of 1\n") == 1);
    CHECK(Count(agent->stderr_text(), " FAILED") == 1);
  }
}

TEST_CASE("every line the agents write of their own has the one prefix and its level") {
  // A job that fails, restarts and fails again, logging at info: notices, warnings, the report.
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(
        StartAgent(With(JobFlags(daemon.endpoint(), "voice", "2", 2, {"--max_restarts=1"}),
                        {kTestWorker, "exit", "3", "5"}),
                   {"/usr/bin/env", "DDPRUN_LOG_LEVEL=info"}));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 5);
  INFO(Outputs(agents));
  const std::regex own_form(R"(ddprun: ((warning|error|debug|trace): )?[^ \[].*)");
  for (auto& agent : agents) {
    int warnings = 0, notices = 0;
    for (const auto& line : Lines(agent->stderr_text())) {
      // The failure report, in torchrun's form, from its first "=====" rule to the end: the
      // agent's last words.
      if (line.rfind("=====", 0) == 0) break;
      if (line.rfind("[rank", 0) == 0) continue;  // a worker's
      INFO(line);
      CHECK(std::regex_match(line, own_form));
      warnings += line.rfind("ddprun: warning: ", 0) == 0;
      notices += std::regex_match(line, std::regex("ddprun: [^:]+"));
    }
    CHECK(warnings >= 1);  // the restart, on both nodes
    CHECK(notices >= 1);
  }
}

TEST_CASE("a node whose agent is killed is dropped at once, the others go on") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(StartAgent(
        With(JobFlags(daemon.endpoint(), "lost", "2:3", 1), {kTestWorker, "until-world", "2"})));
  }
  for (auto& agent : agents) REQUIRE(AwaitLines(*agent, "ready world=3", 1));
  const std::string line = agents[2]->stdout_text();
  const pid_t worker = std::stoi(line.substr(line.find("pid=") + 4));
  agents[2]->Signal(SIGKILL);
  for (int i = 0; i < 2; ++i) CHECK(ExitCode(*agents[i]) == 0);
  INFO(Outputs(agents));
  for (int i = 0; i < 2; ++i) {
    CHECK(Count(agents[i]->stdout_text(), "ready world=2 restart=0") == 1);
    CHECK(Count(agents[i]->stderr_text(), "node 127.0.0.1 lost: ") == 1);
  }
  CHECK(WaitForProcessGone(worker, 10s));  // the killed agent's worker did not outlive it
}

TEST_CASE("a node arriving while the job runs below max starts a new round without a restart") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  // max_restarts=0: had the scale-up spent a restart, the job would fail.
  agents.push_back(StartAgent(
      With(JobFlags(daemon.endpoint(), "grow", "1:2", 1), {kTestWorker, "until-world", "2"})));
  REQUIRE(AwaitLines(*agents[0], "ready world=1 restart=0", 1));
  agents.push_back(StartAgent(
      With(JobFlags(daemon.endpoint(), "grow", "1:2", 1), {kTestWorker, "until-world", "2"})));
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  for (auto& agent : agents) CHECK(Count(agent->stdout_text(), "ready world=2 restart=0") == 1);
  CHECK(Count(agents[0]->stderr_text(), "scale-up") == 1);
}

TEST_CASE("SIGTERM to one agent: that node leaves and the others go on without it") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 3; ++i) {
    agents.push_back(StartAgent(
        With(JobFlags(daemon.endpoint(), "leave", "2:3", 1), {kTestWorker, "until-world", "2"})));
  }
  for (auto& agent : agents) REQUIRE(AwaitLines(*agent, "ready world=3", 1));
  agents[1]->Signal(SIGTERM);
  CHECK(ExitCode(*agents[1]) == 128 + SIGTERM);
  CHECK(ExitCode(*agents[0]) == 0);
  CHECK(ExitCode(*agents[2]) == 0);
  INFO(Outputs(agents));
  CHECK(Count(agents[0]->stdout_text(), "ready world=2") == 1);
  CHECK(Count(agents[0]->stderr_text(), "left") >= 1);
}

TEST_CASE("the agent on the endpoint's host serves the rendezvous, SIGTERM to it ends nothing") {
  const std::string endpoint = UnsharedLoopbackEndpoint();
  const std::vector<std::string> program = {kTestWorker, "until-world", "2"};
  std::vector<std::unique_ptr<ChildProcess>> agents;
  agents.push_back(StartAgent(With(JobFlags(endpoint, "hosted", "2:3", 1), program)));
  // Once the server answers, the first agent hosts it; then the others join.
  auto [serving, last] = AwaitStatus({"--rdzv_endpoint=" + endpoint, "--json"},
                                     [](const std::string& out) { return !out.empty(); });
  INFO(last);
  REQUIRE(serving);
  for (int i = 1; i < 3; ++i) {
    agents.push_back(StartAgent(With(JobFlags(endpoint, "hosted", "2:3", 1), program)));
  }
  for (auto& agent : agents) REQUIRE(AwaitLines(*agent, "ready world=3", 1));
  const size_t host_index = 0;
  agents[host_index]->Signal(SIGTERM);
  for (size_t i = 1; i < agents.size(); ++i) CHECK(ExitCode(*agents[i]) == 0);
  CHECK(ExitCode(*agents[host_index]) == 128 + SIGTERM);
  INFO(Outputs(agents));
  CHECK(Count(agents[host_index]->stderr_text(), "serving its rendezvous") == 1);
  for (size_t i = 1; i < agents.size(); ++i) {
    CHECK(Count(agents[i]->stdout_text(), "ready world=2") == 1);
  }
}

namespace {

// Two agents of `flags` (a job of two nodes at `endpoint`, one worker each, waiting for a
// signal): the first hosts the rendezvous, the second joins once it serves; both workers ready.
std::vector<std::unique_ptr<ChildProcess>> StartHostingAndJoiningAgents(
    const std::string& endpoint, const std::vector<std::string>& flags) {
  std::vector<std::unique_ptr<ChildProcess>> agents;
  agents.push_back(StartAgent(With(flags, {kTestWorker, "wait-for-signal"})));
  auto [serving, last] = AwaitStatus({"--rdzv_endpoint=" + endpoint, "--json"},
                                     [](const std::string& out) { return !out.empty(); });
  INFO(last);
  REQUIRE(serving);
  agents.push_back(StartAgent(With(flags, {kTestWorker, "wait-for-signal"})));
  for (auto& agent : agents) {
    REQUIRE(agent->WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; }));
  }
  return agents;
}

}  // namespace

TEST_CASE("when every node of a job leaves, the agent hosting its rendezvous exits too") {
  const std::string endpoint = UnsharedLoopbackEndpoint();
  // A join timeout far beyond the test's bound: the job must end because no node is left.
  const std::vector<std::string> flags = {
      "--nnodes=2", "--nproc_per_node=1", "--rdzv_endpoint=" + endpoint,
      "--rdzv_id=everyone-leaves", "--rdzv_conf=last_call_timeout=0.3,join_timeout=600"};
  auto agents = StartHostingAndJoiningAgents(endpoint, flags);
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 128 + SIGTERM);
}

TEST_CASE(
    "when the hosting agent leaves and the other node is lost, the join timeout ends the "
    "round with no node, and the hosting agent exits") {
  const std::string endpoint = UnsharedLoopbackEndpoint();
  const std::vector<std::string> flags = {"--nnodes=2", "--nproc_per_node=1",
                                          "--rdzv_endpoint=" + endpoint, "--rdzv_id=lost-last",
                                          QuickRendezvousFlag(3)};
  auto agents = StartHostingAndJoiningAgents(endpoint, flags);
  agents[1]->Signal(SIGKILL);  // lost, not left: it might have come back
  agents[0]->Signal(SIGTERM);
  CHECK(ExitCode(*agents[0]) == 128 + SIGTERM);
}

TEST_CASE("the daemon restarted mid-job: workers keep running, agents re-register, job ends") {
  Daemon daemon;
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(StartAgent(
        With(JobFlags(daemon.endpoint(), "survive", "2", 1), {kTestWorker, "wait-for-signal"})));
  }
  std::vector<pid_t> workers;
  for (auto& agent : agents) {
    auto line = agent->WaitForStdoutLine(
        [](const std::string& l) { return l.find("]: ready ") != std::string::npos; });
    REQUIRE(line.has_value());
    workers.push_back(std::stoi(line->substr(line->rfind(' ') + 1)));
  }
  daemon.Restart();
  auto [back, last] =
      AwaitStatus({"--rdzv_endpoint=" + daemon.endpoint(), "--json"},
                  [](const std::string& out) { return Count(out, "\"state\": \"running\"") == 3; });
  INFO(last);
  REQUIRE(back);  // the job and both nodes, running round 0 again
  CHECK(Count(last, "\"round\": 0") == 1);
  for (pid_t worker : workers) ::kill(worker, SIGTERM);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
  INFO(Outputs(agents));
  for (auto& agent : agents) CHECK(Count(agent->stdout_text(), "]: ready ") == 1);
}

TEST_CASE("a wrong token is refused: the agent says so and exits, the daemon logs it") {
  ScratchDir dir;
  WriteFile(dir / "token", "right-token\n");
  WriteFile(dir / "wrong", "wrong-token\n");
  Daemon daemon({"--token-file=" + (dir / "token")});
  auto agent = StartAgent(
      With(JobFlags(daemon.endpoint(), "locked", "1", 1, {"--token-file=" + (dir / "wrong")}),
           {kTestWorker, "env"}));
  CHECK(ExitCode(*agent) == 1);
  INFO(agent->stderr_text());
  CHECK(Count(agent->stderr_text(), "refused this node") == 1);
  CHECK(Count(agent->stdout_text(), "RANK=") == 0);
  auto right = StartAgent(
      With(JobFlags(daemon.endpoint(), "locked", "1", 1, {"--token-file=" + (dir / "token")}),
           {kTestWorker, "env"}));
  CHECK(ExitCode(*right) == 0);
  daemon.process().Signal(SIGTERM);
  daemon.process().Wait(10s);
  CHECK(Count(daemon.process().stderr_text(), "wrong token") >= 1);
}

TEST_CASE("ddprun status shows jobs, rounds, nodes and restarts, as a table and as JSON") {
  ScratchDir dir;
  WriteFile(dir / "token", "status-token\n");
  Daemon daemon({"--token-file=" + (dir / "token")});
  const std::string token = "--token-file=" + (dir / "token");
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(StartAgent(With(JobFlags(daemon.endpoint(), "shown", "2", 2, {token}),
                                     {kTestWorker, "wait-for-signal"})));
  }
  for (auto& agent : agents) REQUIRE(AwaitLines(*agent, "]: ready ", 2));
  auto json =
      RunStatus({"--rdzv_endpoint=" + daemon.endpoint(), "--rdzv_id=shown", "--json", token});
  INFO(json.out << json.err);
  REQUIRE(json.code() == 0);
  CHECK(Count(json.out, "\"job_id\": \"shown\"") == 1);
  CHECK(Count(json.out, "\"state\": \"running\"") == 3);
  CHECK(Count(json.out, "\"group_rank\": 0") == 1);
  CHECK(Count(json.out, "\"group_rank\": 1") == 1);
  CHECK(Count(json.out, "\"first_global_rank\": 2") == 1);
  CHECK(Count(json.out, "\"restarts_used\": 0") == 1);
  auto table = RunStatus({"--rdzv_endpoint=" + daemon.endpoint(), token});
  INFO(table.out);
  CHECK(table.code() == 0);
  CHECK(Count(table.out, "job shown: running, round 0, restarts 0 of 0, nodes 2") == 1);
  CHECK(Count(table.out, " 0-1 ") == 1);  // the RANKS column
  CHECK(Count(table.out, " 2-3 ") == 1);
  auto unknown = RunStatus({"--rdzv_endpoint=" + daemon.endpoint(), "--rdzv_id=nope", token});
  CHECK(unknown.code() == 1);
  CHECK(Count(unknown.err, "no job 'nope'") == 1);
  auto refused = RunStatus({"--rdzv_endpoint=" + daemon.endpoint()});
  CHECK(refused.code() == 1);
  CHECK(Count(refused.err, "token") >= 1);
  for (auto& agent : agents) agent->Signal(SIGTERM);
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 128 + SIGTERM);
}

TEST_CASE("agents that disagree on --nnodes: the late one is refused, the job is not disturbed") {
  Daemon daemon;
  auto first = StartAgent(
      With(JobFlags(daemon.endpoint(), "disagree", "2", 1), {kTestWorker, "until-world", "2"}));
  auto [joined, last] =
      AwaitStatus({"--rdzv_endpoint=" + daemon.endpoint(), "--rdzv_id=disagree", "--json"},
                  [](const std::string& out) { return Count(out, "\"node_id\"") == 1; });
  INFO(last);
  REQUIRE(joined);
  auto wrong = StartAgent(
      With(JobFlags(daemon.endpoint(), "disagree", "3", 1), {kTestWorker, "until-world", "2"}));
  CHECK(ExitCode(*wrong) == 1);
  INFO(wrong->stderr_text());
  CHECK(Count(wrong->stderr_text(), "give every node the same --nnodes") == 1);
  auto second = StartAgent(
      With(JobFlags(daemon.endpoint(), "disagree", "2", 1), {kTestWorker, "until-world", "2"}));
  CHECK(ExitCode(*first) == 0);
  CHECK(ExitCode(*second) == 0);
}

TEST_CASE("garbage on the rendezvous port is dropped and the server keeps serving jobs") {
  Daemon daemon;
  for (int i = 0; i < 3; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(std::stoi(daemon.endpoint().substr(10))));
    ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
    const std::string garbage = "GET / HTTP/1.1\r\n\r\n\x00\xff garbage garbage";
    CHECK(::write(fd, garbage.data(), garbage.size()) > 0);
    ::close(fd);
  }
  std::vector<std::unique_ptr<ChildProcess>> agents;
  for (int i = 0; i < 2; ++i) {
    agents.push_back(
        StartAgent(With(JobFlags(daemon.endpoint(), "after", "2", 1), {kTestWorker, "env"})));
  }
  for (auto& agent : agents) CHECK(ExitCode(*agent) == 0);
}
