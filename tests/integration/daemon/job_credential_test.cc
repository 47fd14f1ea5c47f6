// One credential, one door: a job's workers hold the job's store credential, never the daemon's
// token. Taken from a real worker of a job a real ddprund runs, the credential serves that job's
// store keys, and nothing else: not another job's keys, not a job start, not a rendezvous
// session, and not once the job has ended.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "ddprun/rendezvous/job_client.h"
#include "ddprun/rendezvous/store_client.h"
#include "integration/multinode/multinode_support.h"
#include "support/etcd_cluster.h"
#include "support/skip.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

constexpr char kDaemonToken[] = "daemon-token";

// KEY=VALUE lines of `env`'s output.
std::map<std::string, std::string> EnvironmentIn(const std::string& text) {
  std::map<std::string, std::string> variables;
  for (const std::string& line : Lines(text)) {
    if (auto equals = line.find('='); equals != std::string::npos) {
      variables[line.substr(0, equals)] = line.substr(equals + 1);
    }
  }
  return variables;
}

// Writes a line into `fifo` once its reader has it open; false when none does within `timeout`.
bool ReleaseReader(const std::string& fifo, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
      const bool written = ::write(fd, "go\n", 3) == 3;
      ::close(fd);
      return written;
    }
    std::this_thread::sleep_for(10ms);  // ENXIO: the reader has not opened it yet
  }
  return false;
}

std::unique_ptr<StoreClient> StoreAs(const std::string& address, const std::string& token,
                                     const std::string& job_id) {
  StoreClientOptions options;
  options.address = address;
  options.security.token = token;
  options.job_id = job_id;
  return StoreClient::Connect(options);
}

// `path`, made a FIFO (before a worker opens it).
std::string MadeFifo(const std::string& path) {
  REQUIRE(::mkfifo(path.c_str(), 0600) == 0);
  return path;
}

// A one-node job that a submitter starts on `daemon` (with the daemon token in dir/token),
// whose worker records its environment and runs until Release.
struct JobWithOneWorker {
  JobWithOneWorker(const ScratchDir& dir, const Daemon& daemon, const std::string& job)
      : fifo(MadeFifo(dir / "release")),
        submitter(Ddprun({"--token-file=" + dir / "token", "--hosts=" + daemon.endpoint(),
                          "--rdzv_id=" + job, "sh", "-c",
                          "env > \"$0.part\" && mv \"$0.part\" \"$0\" && echo worker-ready && "
                          "read go < \"$1\"",
                          dir / "env", fifo})) {
    REQUIRE(submitter.WaitForStdoutLine(
        [](const std::string& line) { return line.find("worker-ready") != std::string::npos; },
        60s));
    env = EnvironmentIn(ReadFile(dir / "env"));
    credential = env["DDPRUN_TOKEN"];
  }

  // Lets the worker exit; the job ends, and the submitter with it.
  void Release() {
    REQUIRE(ReleaseReader(fifo, 30s));
    auto exit = submitter.Wait(60s);
    INFO(submitter.stdout_text() << submitter.stderr_text());
    REQUIRE(exit.has_value());
    CHECK(exit->exit_code == 0);
  }

  const std::string fifo;
  ChildProcess submitter;
  std::map<std::string, std::string> env;
  std::string credential;
};

}  // namespace

TEST_CASE("a worker's store credential serves its job's keys only, and ends with the job") {
  ScratchDir dir;
  WriteFile(dir / "token", std::string(kDaemonToken) + "\n");
  Daemon daemon(
      {"--allow-root-jobs", "--agent-program=" + kDdprun, "--token-file=" + dir / "token"});
  JobWithOneWorker job(dir, daemon, "credential-job");
  auto& env = job.env;
  const std::string credential = job.credential;
  const std::string job_id = env["DDPRUN_JOB_ID"];
  INFO("worker's DDPRUN_STORE_ADDR " << env["DDPRUN_STORE_ADDR"]);
  CHECK(job_id == "credential-job");
  CHECK(env["DDPRUN_STORE_ADDR"] == daemon.endpoint());  // the daemon's store, not the agent's
  REQUIRE(credential.size() == 64);
  CHECK(ReadFile(dir / "env").find(kDaemonToken) == std::string::npos);

  SECTION("it serves the job's own keys") {
    auto own = StoreAs(daemon.endpoint(), credential, job_id);
    REQUIRE(own->Set("k", "v").ok());
    auto value = own->Get("k");
    REQUIRE(value.ok());
    CHECK(value.value() == "v");
    CHECK(own->Add("n", 2).ok());
    CHECK(own->Wait({"k"}, 5s).ok());
  }
  SECTION("it reads and writes no other job's keys") {
    REQUIRE(StoreAs(daemon.endpoint(), kDaemonToken, "other-job")->Set("secret", "s").ok());
    auto other = StoreAs(daemon.endpoint(), credential, "other-job");
    auto read = other->Get("secret");
    CHECK(read.status().code() == StatusCode::kUnauthenticated);
    CHECK(read.status().message().find("that job's credential") != std::string::npos);
    CHECK(other->Set("secret", "overwritten").code() == StatusCode::kUnauthenticated);
    CHECK(other->Wait({"secret"}, 1s).code() == StatusCode::kUnauthenticated);
    CHECK(StoreAs(daemon.endpoint(), kDaemonToken, "other-job")->Get("secret").value() == "s");
  }
  SECTION("it starts no job and lists none") {
    ClientSecurity security;
    security.token = credential;
    JobClient jobs(daemon.endpoint(), security);
    v1::StartJobRequest start;
    start.set_job_id("started-by-a-worker");
    start.add_hosts(daemon.endpoint());
    start.add_program("true");
    start.set_working_dir("/");
    CHECK(jobs.Start(start, 10s).code() == StatusCode::kUnauthenticated);
    CHECK(jobs.List("", 10s).status().code() == StatusCode::kUnauthenticated);
  }

  job.Release();
  // The job has ended: its credential opens nothing, its own keys included.
  CHECK(StoreAs(daemon.endpoint(), credential, job_id)->Get("k").status().code() ==
        StatusCode::kUnauthenticated);
}

TEST_CASE(
    "on daemons sharing one etcd, a worker's store credential opens its job's keys at every "
    "daemon while the job runs, and at none once it ended") {
  if (EtcdCluster::EtcdProgram().empty()) return SkipTest(EtcdCluster::kNotInstalled);
  EtcdCluster cluster(1);
  ScratchDir dir;
  WriteFile(dir / "token", std::string(kDaemonToken) + "\n");
  const std::vector<std::string> flags = {"--allow-root-jobs", "--agent-program=" + kDdprun,
                                          "--token-file=" + dir / "token", "--store=etcd",
                                          "--etcd-endpoints=" + cluster.EndpointList()};
  Daemon leader(flags);
  Daemon other(flags);  // never hears of the job: its worker's calls fail over to it
  JobWithOneWorker job(dir, leader, "shared-credential-job");
  REQUIRE(job.credential.size() == 64);

  auto at_leader = StoreAs(leader.endpoint(), job.credential, "shared-credential-job");
  auto at_other = StoreAs(other.endpoint(), job.credential, "shared-credential-job");
  REQUIRE(at_leader->Set("k", "v").ok());
  auto read = at_other->Get("k");
  INFO(read.status().message());
  REQUIRE(read.ok());
  CHECK(read.value() == "v");
  CHECK(at_other->Add("n", 1).ok());
  CHECK(at_other->Wait({"k"}, 5s).ok());
  // No other job's keys, and nothing but the store.
  CHECK(StoreAs(other.endpoint(), job.credential, "other-job")->Get("k").status().code() ==
        StatusCode::kUnauthenticated);
  ClientSecurity as_worker;
  as_worker.token = job.credential;
  CHECK(JobClient(other.endpoint(), as_worker).List("", 10s).status().code() ==
        StatusCode::kUnauthenticated);

  job.Release();
  CHECK(at_leader->Get("k").status().code() == StatusCode::kUnauthenticated);
  // The other daemon's answer may be as old as its cache allows (1 s): asked until it refuses.
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  Status refused = at_other->Get("k").status();
  while (refused.code() != StatusCode::kUnauthenticated &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
    refused = at_other->Get("k").status();
  }
  CHECK(refused.code() == StatusCode::kUnauthenticated);
}
