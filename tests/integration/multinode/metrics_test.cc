// The operators' HTTP endpoint of a real ddprund (--metrics-port; docs/metrics.md) and of a real
// standalone ddprun (--metrics_port): real HTTP over real sockets, real agents and workers. The
// page is read by Debian's promtool, its counters and histograms follow a hang and the restart it
// causes, the ranks of a running job show their steps, an endpoint with a token answers nothing
// without it, and readiness follows the jobs' store (a real etcd member killed and started
// again).
#include <signal.h>

#include <filesystem>
#include <regex>

#include "integration/multinode/multinode_support.h"
#include "support/etcd_cluster.h"
#include "support/http_client.h"
#include "support/own_loopback_address.h"
#include "support/skip.h"
#include "support/test_paths.h"

namespace ddprun::testing {
namespace {

const std::string kCollectivesWorker = ddprun::testing::paths::kCollectivesWorker;

HttpAnswer Scrape(int port, const std::string& path = "/metrics",
                  const std::map<std::string, std::string>& headers = {}) {
  return HttpGet("127.0.0.1", port, path, headers);
}
HttpAnswer Scrape(const Daemon& daemon, const std::string& path = "/metrics",
                  const std::map<std::string, std::string>& headers = {}) {
  return Scrape(daemon.metrics_port(), path, headers);
}

// A standalone ddprun with --metrics_port=0 and `args`; the port it says it serves on.
int StartStandalone(std::unique_ptr<ChildProcess>& ddprun, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"--standalone", "--metrics_port=0"};
  argv.insert(argv.end(), args.begin(), args.end());
  ddprun = StartAgent(argv);
  const std::string said = "ddprun: metrics on http://127.0.0.1:";
  auto line =
      ddprun->WaitForStderrLine([&](const std::string& l) { return l.rfind(said, 0) == 0; });
  INFO(ddprun->stderr_text());
  REQUIRE(line.has_value());
  return std::stoi(line->substr(said.size()));
}

// The value of the sample `series` (its name and labels, exactly as written) on `page`, or -1.
double SampleValue(const std::string& page, const std::string& series) {
  const std::string start = series + " ";
  for (size_t at = page.find(start); at != std::string::npos; at = page.find(start, at + 1)) {
    if (at == 0 || page[at - 1] == '\n') return std::stod(page.substr(at + start.size()));
  }
  return -1;
}

// promtool's verdict on a text-format page: "" when it reads it without complaint.
std::string PromtoolProblems(const std::string& page) {
  ScratchDir dir;
  WriteFile(dir / "page.txt", page);
  auto result = Run({"/bin/sh", "-c", "promtool check metrics < " + (dir / "page.txt")}, {}, 30s);
  return result.code() == 0 ? "" : result.out + result.err;
}

bool HavePromtool() { return !FindOnPath("promtool").empty(); }
constexpr char kNoPromtool[] = "no promtool (Debian's prometheus; ./run.sh test installs it)";

TEST_CASE(
    "ddprund's /metrics: promtool reads it, and a hang and the restart it causes move the "
    "job's counters and histograms") {
  if (!HavePromtool()) return SkipTest(kNoPromtool);
  Daemon daemon({"--metrics-port=0"});
  REQUIRE(daemon.metrics_port() > 0);
  auto empty = Scrape(daemon);
  INFO(empty.error << empty.body);
  REQUIRE(empty.status == 200);
  CHECK(empty.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8");
  CHECK(SampleValue(empty.body, R"(ddprun_jobs{state="running"})") == 0);
  CHECK(PromtoolProblems(empty.body).empty());

  // Rank 1 blocks in its own code at step 10 of 40; the hang is found after 2 s, the job
  // restarts once and completes.
  auto agent = StartAgent({"--nnodes=1", "--nproc_per_node=3",
                           "--rdzv_endpoint=" + daemon.endpoint(), "--rdzv_id=watched",
                           "--max_restarts=1", "--hang_timeout=2", "--hang_first_timeout=30",
                           kCollectivesWorker, "train", "40", "pause", "1", "10"});
  const int exit_code = ExitCode(*agent);
  INFO(agent->stdout_text() << agent->stderr_text());
  REQUIRE(exit_code == 0);

  auto after = Scrape(daemon);
  const std::string& page = after.body;
  INFO(page);
  REQUIRE(after.status == 200);
  CHECK(PromtoolProblems(page).empty());
  CHECK(SampleValue(page, R"(ddprun_jobs{state="complete"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_state{job="watched",state="complete"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_rounds_total{job="watched"})") == 2);
  CHECK(SampleValue(page, R"(ddprun_job_restarts_total{job="watched"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_restarts_left{job="watched"})") == 0);
  CHECK(SampleValue(page, R"(ddprun_job_hangs_total{job="watched"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_worker_failures_total{job="watched",cause="hang"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_worker_failures_total{job="watched",cause="signal"})") ==
        0);
  CHECK(SampleValue(page, R"(ddprun_job_nodes_lost_total{job="watched"})") == 0);
  // One restart, one hang: each histogram counted one, in the buckets its time falls in.
  CHECK(SampleValue(page, R"(ddprun_restart_seconds_count{job="watched"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_restart_seconds_bucket{job="watched",le="+Inf"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_hang_detection_seconds_count{job="watched"})") == 1);
  const double hang_seconds =
      SampleValue(page, R"(ddprun_hang_detection_seconds_sum{job="watched"})");
  CHECK(hang_seconds >= 2.0);  // the timeout, and at most a sampling period or two beyond it
  CHECK(hang_seconds < 10.0);
  CHECK(SampleValue(page, R"(ddprun_hang_detection_seconds_bucket{job="watched",le="1.0"})") == 0);
  CHECK(SampleValue(page, R"(ddprun_round_formation_seconds_count{job="watched"})") == 2);
  // The agent's session stream, counted when it ended.
  CHECK(
      std::regex_search(page, std::regex(R"(ddprun_rpcs_total\{service="ddprun\.v1\.)"
                                         R"(Rendezvous",method="Session",code="[A-Z_]+"\} 1\n)")));
  CHECK(SampleValue(page, "ddprun_sessions") == 0);

  // OpenMetrics when asked for, as Prometheus asks.
  auto open = Scrape(daemon, "/metrics",
                     {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;q=0.5"}});
  CHECK(open.headers["content-type"] ==
        "application/openmetrics-text; version=1.0.0; charset=utf-8");
  CHECK(open.body.find("# TYPE ddprun_job_restarts counter\n") != std::string::npos);
  CHECK(SampleValue(open.body, R"(ddprun_job_restarts_total{job="watched"})") == 1);
  CHECK(open.body.size() >= 6);
  CHECK(open.body.substr(open.body.size() - 6) == "# EOF\n");
}

TEST_CASE("the ranks of a running four-rank job show their steps, pace and collectives") {
  if (!HavePromtool()) return SkipTest(kNoPromtool);
  Daemon daemon({"--metrics-port=0"});
  auto agent =
      StartAgent({"--nnodes=1", "--nproc_per_node=4", "--rdzv_endpoint=" + daemon.endpoint(),
                  "--rdzv_id=paced", "--hang_timeout=60", kCollectivesWorker, "train", "100000",
                  "none", "0", "10"});
  // Until every rank has taken enough steps to have a pace.
  std::string page;
  bool paced = false;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!paced && std::chrono::steady_clock::now() < deadline) {
    page = Scrape(daemon).body;
    paced = std::regex_search(page, std::regex(R"(ddprun_rank_steps_per_second\{[^}]*rank="3")"));
    for (int rank = 0; rank < 4 && paced; ++rank) {
      paced = std::regex_search(
          page, std::regex(R"(ddprun_rank_steps_per_second\{job="paced",node="127\.0\.0\.1",)"
                           R"(rank=")" +
                           std::to_string(rank) + R"(",local_rank=")" + std::to_string(rank) +
                           R"("\} [0-9.e+]+\n)"));
    }
    if (!paced) std::this_thread::sleep_for(50ms);
  }
  INFO(page << agent->stderr_text());
  CHECK(paced);
  CHECK(PromtoolProblems(page).empty());
  for (int rank = 0; rank < 4; ++rank) {
    const std::string labels = R"({job="paced",node="127.0.0.1",rank=")" + std::to_string(rank) +
                               R"(",local_rank=")" + std::to_string(rank) + R"("})";
    CHECK(SampleValue(page, "ddprun_rank_step" + labels) > 0);
    CHECK(SampleValue(page, "ddprun_rank_collectives_started_total" + labels) > 0);
    CHECK(SampleValue(page, "ddprun_rank_seconds_since_progress" + labels) < 30);
    CHECK(SampleValue(page, "ddprun_rank_straggler" + labels) == 0);
  }
  CHECK(SampleValue(page, R"(ddprun_job_nodes{job="paced"})") == 1);
  CHECK(SampleValue(page, "ddprun_sessions") == 1);
  agent->Signal(SIGTERM);
  CHECK(agent->Wait(60s).has_value());
}

// Headless Chromium (Debian's chromium) on the live page of `daemon`, job `job`: the DOM once its
// script has polled for 3 s of virtual time, and with `screenshot`, a PNG of it there.
RunResult Chromium(const Daemon& daemon, const std::string& job, const ScratchDir& profile,
                   const std::string& screenshot = "") {
  std::vector<std::string> argv = {FindOnPath("chromium"),
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--hide-scrollbars",
                                   "--user-data-dir=" + (profile / "chromium"),
                                   "--window-size=1100,1000",
                                   "--virtual-time-budget=3000"};
  argv.push_back(screenshot.empty() ? "--dump-dom" : "--screenshot=" + screenshot);
  argv.push_back("http://127.0.0.1:" + std::to_string(daemon.metrics_port()) + "/#job=" + job);
  return Run(argv, {}, 60s);
}

TEST_CASE("the live page plots the ranks of a running four-rank job and shows a hung one as hung") {
  if (FindOnPath("chromium").empty()) {
    return SkipTest("no chromium (Debian's; ./run.sh test installs it)");
  }
  Daemon daemon({"--metrics-port=0"});
  // Rank 2 blocks in its own code at step 200; with --hang_action=stacks the job is reported
  // hung and left running.
  auto agent =
      StartAgent({"--nnodes=1", "--nproc_per_node=4", "--rdzv_endpoint=" + daemon.endpoint(),
                  "--rdzv_id=live", "--hang_timeout=2", "--hang_action=stacks", kCollectivesWorker,
                  "train", "400", "pause", "2", "10"});
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  HttpAnswer jobs = Scrape(daemon, "/api/jobs?job=live");
  while (Count(jobs.body, "\"hung\": true") == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    jobs = Scrape(daemon, "/api/jobs?job=live");
  }
  INFO(jobs.body << agent->stderr_text());
  REQUIRE(Count(jobs.body, "\"hung\": true") == 1);
  CHECK(jobs.headers["content-type"] == "application/json");
  // Without ?job= (or for another job), no rank's progress: a poll of many jobs stays small.
  CHECK(Count(Scrape(daemon, "/api/jobs").body, "\"global_rank\"") == 0);
  CHECK(Count(Scrape(daemon, "/api/jobs?job=other").body, "\"global_rank\"") == 0);
  CHECK(Count(Scrape(daemon, "/api/jobs?job=l%69ve&x=1").body, "\"global_rank\"") == 4);

  ScratchDir profile;
  auto page = Chromium(daemon, "live", profile);
  INFO(page.out << page.err);
  REQUIRE(page.code() == 0);
  CHECK(Count(page.out, R"(<canvas id="steps" width="960" height="260" data-ranks-drawn="4">)") ==
        1);
  CHECK(Count(page.out, R"(<canvas id="pace" width="960" height="180" data-ranks-drawn="4">)") ==
        1);
  CHECK(Count(page.out, "<tr data-rank=") == 4);
  CHECK(Count(page.out, R"(<tr data-rank="2" class="hung">)") == 1);
  CHECK(Count(page.out, R"(class="hung")") == 1);
  CHECK(Count(page.out, R"(<td class="state-running">running</td>)") == 1);
  CHECK(Count(page.out, "lost contact") == 0);

  auto shot = Chromium(daemon, "live", profile, profile / "live.png");
  CHECK(shot.code() == 0);
  CHECK(ReadFile(profile / "live.png").rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  agent->Signal(SIGTERM);
  CHECK(agent->Wait(60s).has_value());
}

TEST_CASE("with a token, the endpoint answers 401 and nothing else to a request without it") {
  ScratchDir dir;
  WriteFile(dir / "token", "metrics-token\n");
  Daemon daemon({"--metrics-port=0", "--token-file=" + (dir / "token")});
  for (const std::string path : {"/metrics", "/healthz", "/readyz", "/nowhere"}) {
    INFO(path);
    for (const std::map<std::string, std::string>& headers :
         std::vector<std::map<std::string, std::string>>{{},
                                                         {{"Authorization", "Bearer wrong-token"}},
                                                         {{"Authorization", "metrics-token"}},
                                                         {{"Authorization", "Basic !!!"}}}) {
      auto refused = Scrape(daemon, path, headers);
      CHECK(refused.status == 401);
      CHECK(refused.headers["www-authenticate"].rfind("Bearer realm=\"ddprun\", Basic", 0) == 0);
      CHECK(refused.body.find("ddprun_") == std::string::npos);
    }
  }
  auto metrics = Scrape(daemon, "/metrics", {{"Authorization", "Bearer metrics-token"}});
  CHECK(metrics.status == 200);
  CHECK(SampleValue(metrics.body, R"(ddprun_jobs{state="running"})") == 0);
  CHECK(Scrape(daemon, "/healthz", {{"Authorization", "bearer metrics-token"}}).status == 200);
  // A browser's Basic credentials, the token as the password: "ops:metrics-token".
  CHECK(Scrape(daemon, "/healthz", {{"Authorization", "Basic b3BzOm1ldHJpY3MtdG9rZW4="}}).status ==
        200);
  CHECK(Scrape(daemon, "/healthz", {{"Authorization", "Basic b3BzOndyb25n"}}).status == 401);
  CHECK(Scrape(daemon, "/nowhere", {{"Authorization", "Bearer metrics-token"}}).status == 404);
}

TEST_CASE("readiness follows the jobs' store: 503 while its etcd is down, 200 once it is back") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  Daemon daemon({"--metrics-port=0", "--store=etcd", "--etcd-endpoints=" + cluster.EndpointList()});
  CHECK(Scrape(daemon, "/readyz").status == 200);
  CHECK(Scrape(daemon, "/healthz").body == "ok\n");
  cluster.Kill(0);
  auto down = Scrape(daemon, "/readyz");
  CHECK(down.status == 503);
  CHECK(down.body.find("the jobs' store does not answer") != std::string::npos);
  // The process itself is well: restarting it would not bring etcd back.
  CHECK(Scrape(daemon, "/healthz").status == 200);
  cluster.Restart(0);
  HttpAnswer back;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  do {
    back = Scrape(daemon, "/readyz");
  } while (back.status != 200 && std::chrono::steady_clock::now() < deadline);
  INFO(back.body);
  CHECK(back.status == 200);
}

TEST_CASE("a real Prometheus scrapes the daemon each second with its token and reads the ranks") {
  const std::string prometheus = FindOnPath("prometheus");
  if (prometheus.empty()) return SkipTest("no prometheus (Debian's; ./run.sh test installs it)");
  ScratchDir dir;
  WriteFile(dir / "token", "scrape-token\n");
  Daemon daemon({"--metrics-port=0", "--token-file=" + (dir / "token")});
  auto agent =
      StartAgent({"--nnodes=1", "--nproc_per_node=3", "--rdzv_endpoint=" + daemon.endpoint(),
                  "--rdzv_id=scraped", "--token-file=" + (dir / "token"), "--hang_timeout=60",
                  kCollectivesWorker, "train", "1000000", "none", "0", "10"});
  // The configuration docs/metrics.md gives, at one scrape a second.
  WriteFile(dir / "prometheus.yml",
            "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
            "scrape_configs:\n"
            "  - job_name: ddprund\n"
            "    honor_labels: true\n"
            "    authorization: {credentials_file: " +
                (dir / "token") +
                "}\n"
                "    static_configs: [{targets: [\"127.0.0.1:" +
                std::to_string(daemon.metrics_port()) + "\"]}]\n");
  const std::string address = OwnLoopbackAddress(0);
  ChildProcess server({prometheus, "--config.file=" + (dir / "prometheus.yml"),
                       "--storage.tsdb.path=" + (dir / "data"),
                       "--web.listen-address=" + address + ":9090"});
  // Asks Prometheus `query` until the answer holds `expected`, or a minute has passed.
  auto query = [&](const std::string& promql, const std::string& expected) {
    HttpAnswer answer;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    do {
      answer = HttpGet(address, 9090, "/api/v1/query?query=" + promql);
      if (answer.status == 200 && answer.body.find(expected) != std::string::npos) break;
      std::this_thread::sleep_for(200ms);
    } while (std::chrono::steady_clock::now() < deadline);
    return answer.body;
  };
  // up{job="ddprund"} is 1: scraped, with the token, and the page parsed.
  const std::string up = query("up", R"("value":[)");
  INFO(up << server.stderr_text());
  CHECK(up.find(R"("job":"ddprund")") != std::string::npos);
  CHECK(up.find(R"(,"1"]})") != std::string::npos);
  // Each rank's step, under ddprun's job label (honor_labels), with its rank.
  const std::string steps = query("ddprun_rank_step", R"("rank":"2")");
  INFO(steps);
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(Count(steps, R"("rank":")" + std::to_string(rank) + "\"") == 1);
  }
  CHECK(Count(steps, R"("job":"scraped")") == 3);
  agent->Signal(SIGTERM);
  CHECK(agent->Wait(60s).has_value());
}

TEST_CASE(
    "a standalone ddprun serves its job as ddprund serves its jobs, with the counters of a hang "
    "and its restart and the steps of its running ranks") {
  if (!HavePromtool()) return SkipTest(kNoPromtool);
  // Rank 1 blocks in its own code at step 20 of the first attempt; the hang is found after 2 s
  // and the group restarts once, then trains on until stopped.
  std::unique_ptr<ChildProcess> ddprun;
  const int port =
      StartStandalone(ddprun, {"--nproc_per_node=3", "--rdzv_id=alone", "--max_restarts=1",
                               "--hang_timeout=2", "--hang_first_timeout=30", kCollectivesWorker,
                               "train", "1000000", "pause", "1", "10", "20"});
  const std::regex rank_stepping(
      R"(ddprun_rank_step\{job="alone",node="[^"]+",rank="2",local_rank="2"\} ([0-9]+)\n)");
  std::string page;
  std::smatch step;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  do {
    page = Scrape(port).body;
    if (SampleValue(page, R"(ddprun_job_restarts_total{job="alone"})") == 1 &&
        std::regex_search(page, step, rank_stepping) && std::stoi(step[1]) > 0) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < deadline);
  INFO(page << ddprun->stderr_text());
  CHECK(PromtoolProblems(page).empty());
  CHECK(SampleValue(page, R"(ddprun_jobs{state="running"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_state{job="alone",state="running"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_nodes{job="alone"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_rounds_total{job="alone"})") == 2);
  CHECK(SampleValue(page, R"(ddprun_job_restarts_total{job="alone"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_restarts_left{job="alone"})") == 0);
  CHECK(SampleValue(page, R"(ddprun_job_hangs_total{job="alone"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_job_worker_failures_total{job="alone",cause="hang"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_restart_seconds_count{job="alone"})") == 1);
  CHECK(SampleValue(page, R"(ddprun_hang_detection_seconds_count{job="alone"})") == 1);
  const double hang_seconds =
      SampleValue(page, R"(ddprun_hang_detection_seconds_sum{job="alone"})");
  CHECK(hang_seconds >= 2.0);  // the timeout, and at most a sampling period or two beyond it
  CHECK(hang_seconds < 10.0);
  CHECK(SampleValue(page, R"(ddprun_round_formation_seconds_count{job="alone"})") == 2);
  for (int rank = 0; rank < 3; ++rank) {
    INFO("rank " << rank);
    CHECK(std::regex_search(
        page,
        std::regex(R"(ddprun_rank_collectives_started_total\{job="alone",node="[^"]+",rank=")" +
                   std::to_string(rank) + R"(",local_rank=")" + std::to_string(rank) +
                   R"("\} [1-9][0-9]*\n)")));
  }
  CHECK(Scrape(port, "/healthz").body == "ok\n");
  CHECK(Scrape(port, "/readyz").body == "ready\n");
  auto jobs = Scrape(port, "/api/jobs?job=alone");
  CHECK(jobs.headers["content-type"] == "application/json");
  CHECK(Count(jobs.body, "\"global_rank\"") == 3);
  CHECK(Count(jobs.body, "\"job_id\": \"alone\"") == 1);
  CHECK(Scrape(port, "/").body.find("<canvas id=\"steps\"") != std::string::npos);
  ddprun->Signal(SIGTERM);
  CHECK(ddprun->Wait(60s).has_value());
}

TEST_CASE("on many nodes, the agent hosting the rendezvous serves the whole job, the others none") {
  const std::string endpoint = UnsharedLoopbackEndpoint();
  auto agent_flags = [&] {
    return std::vector<std::string>{"--nnodes=2",
                                    "--nproc_per_node=2",
                                    "--rdzv_endpoint=" + endpoint,
                                    "--rdzv_id=hosted",
                                    QuickRendezvousFlag(30),
                                    "--hang_timeout=60",
                                    "--metrics_port=0",
                                    kCollectivesWorker,
                                    "train",
                                    "1000000",
                                    "none",
                                    "0",
                                    "10"};
  };
  auto host = StartAgent(agent_flags());
  const std::string said = "ddprun: metrics on http://127.0.0.1:";
  auto line = host->WaitForStderrLine([&](const std::string& l) { return l.rfind(said, 0) == 0; });
  INFO(host->stderr_text());
  REQUIRE(line.has_value());
  const int port = std::stoi(line->substr(said.size()));
  auto other = StartAgent(agent_flags());
  std::string page;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  do {
    page = Scrape(port).body;
    if (Count(page, "\nddprun_rank_step{job=\"hosted\"") == 4) break;
    std::this_thread::sleep_for(50ms);
  } while (std::chrono::steady_clock::now() < deadline);
  INFO(page << host->stderr_text() << other->stderr_text());
  CHECK(Count(page, "\nddprun_rank_step{job=\"hosted\"") == 4);  // both nodes' ranks
  CHECK(SampleValue(page, R"(ddprun_job_nodes{job="hosted"})") == 2);
  CHECK(SampleValue(page, "ddprun_sessions") == 2);
  CHECK(Count(other->stderr_text(), "ddprun: metrics on") == 0);
  for (auto* agent : {other.get(), host.get()}) {
    agent->Signal(SIGTERM);
    CHECK(agent->Wait(60s).has_value());
  }
}

TEST_CASE(
    "a standalone ddprun's endpoint needs the token of --token-file, and a port in use stops the "
    "launch before any worker starts") {
  ScratchDir dir;
  WriteFile(dir / "token", "launcher-token\n");
  std::unique_ptr<ChildProcess> ddprun;
  const int port = StartStandalone(
      ddprun, {"--token-file=" + (dir / "token"), "--no_python", "/bin/sleep", "60"});
  for (const std::string path : {"/metrics", "/healthz", "/api/jobs"}) {
    INFO(path);
    CHECK(Scrape(port, path).status == 401);
    CHECK(Scrape(port, path, {{"Authorization", "Bearer wrong"}}).status == 401);
    CHECK(Scrape(port, path, {{"Authorization", "Bearer launcher-token"}}).status == 200);
  }

  const std::string marker = dir / "started";
  auto second = Run({kDdprun, "--standalone", "--metrics_port=" + std::to_string(port), kTestWorker,
                     "touch", marker});
  INFO(second.err);
  CHECK(second.code() == 1);
  CHECK(second.err.find("ddprun: error: --metrics_port: ") != std::string::npos);
  CHECK(Lines(second.err).size() == 1);
  CHECK_FALSE(std::filesystem::exists(marker));
  ddprun->Signal(SIGTERM);
  CHECK(ddprun->Wait(60s).has_value());
}

}  // namespace
}  // namespace ddprun::testing
