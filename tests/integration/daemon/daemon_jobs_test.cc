// The job service of a real ddprund on loopback: its policy (root, duplicate ids, malformed
// requests), its log of who started what, its shutdown, and the submitter's usage errors. The
// multi-host behaviour is in integration/multinode/host_daemon_test.cc.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ddprun/rendezvous/job_client.h"
#include "integration/multinode/host_daemon_support.h"
#include "support/terminal_process.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

RunResult RunDdprun(const std::vector<std::string>& args) { return Run(Ddprun(args), {}, 120s); }

std::vector<std::string> operator+(std::vector<std::string> head,
                                   const std::vector<std::string>& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

// The token every daemon of these tests has, and every command gives.
const std::string& TokenFile() {
  static const std::string path = [] {
    static ScratchDir dir;
    WriteFile(dir / "token", "jobs-token\n");
    return dir / "token";
  }();
  return path;
}

// A daemon on a free loopback port running jobs (as root, where the tests run as root).
std::unique_ptr<Daemon> JobDaemon(std::vector<std::string> more = {"--allow-root-jobs"}) {
  more.push_back("--agent-program=" + kDdprun);
  more.push_back("--token-file=" + TokenFile());
  return std::make_unique<Daemon>(more);
}

// `ddprun --token-file=... --hosts=DAEMON ARGS`.
std::vector<std::string> SubmitCommand(const Daemon& daemon, std::vector<std::string> args) {
  args.insert(args.begin(), {"--token-file=" + TokenFile(), "--hosts=" + daemon.endpoint()});
  return Ddprun(args);
}

RunResult Submit(const Daemon& daemon, std::vector<std::string> args) {
  return Run(SubmitCommand(daemon, std::move(args)), {}, 120s);
}

RunResult JobCommand(const Daemon& daemon, const std::string& command,
                     std::vector<std::string> args) {
  args.insert(args.begin(), command);
  args.push_back("--host=" + daemon.endpoint());
  args.push_back("--token-file=" + TokenFile());
  return RunDdprun(args);
}

ClientSecurity WithToken() {
  ClientSecurity security;
  security.token = "jobs-token";
  return security;
}

}  // namespace

TEST_CASE("a daemon without a token runs no jobs, saying why") {
  Daemon daemon({"--allow-root-jobs", "--agent-program=" + kDdprun});
  auto refused = RunDdprun({"--hosts=" + daemon.endpoint(), "true"});
  CHECK(refused.code() == 1);
  CHECK(Count(refused.err, "this daemon has no token and so runs no jobs") == 1);
}

TEST_CASE("a daemon of a build tree runs jobs with the ddprun beside it, as an installed one") {
  // No --agent-program: build/bin/ddprund takes build/bin/ddprun.
  Daemon daemon({"--allow-root-jobs", "--token-file=" + TokenFile()});
  ScratchDir dir;
  auto ran = Submit(daemon, {"sh", "-c", "touch \"$0\"", dir / "ran"});
  INFO(ran.out << ran.err);
  CHECK(ran.code() == 0);
  CHECK(::access((dir / "ran").c_str(), F_OK) == 0);
}

TEST_CASE("a daemon running as root runs no job unless its configuration allows root jobs") {
  if (::geteuid() != 0) {
    SkipTest("the daemon's root policy needs the tests to run as root");
    return;
  }
  auto daemon = JobDaemon({});
  ScratchDir dir;
  auto refused = Submit(*daemon, {"sh", "-c", "touch \"$0\"", dir / "ran"});
  INFO(refused.err);
  CHECK(refused.code() == 1);
  CHECK(Count(refused.err, "runs as root") == 1);
  CHECK(Count(refused.err, "allow_root_jobs = true") == 1);
  CHECK(::access((dir / "ran").c_str(), F_OK) != 0);
}

TEST_CASE("the daemon logs every job it starts with the caller's address") {
  auto daemon = JobDaemon();
  auto ran = Submit(*daemon, {"--rdzv_id=logged-job", "true"});
  INFO(ran.err);
  CHECK(ran.code() == 0);
  daemon->process().Signal(SIGTERM);
  REQUIRE(daemon->process().Wait(30s).has_value());
  const std::string& log = daemon->process().stderr_text();
  INFO(log);
  CHECK(Count(log, "started job logged-job (host 1 of 1) for ipv4:127.0.0.1:") == 1);
}

TEST_CASE("a malformed job request gets a clear error and the daemon serves on") {
  auto daemon = JobDaemon();
  auto bad_id = Submit(*daemon, {"--rdzv_id=bad id", "true"});
  CHECK(bad_id.code() == 1);
  CHECK(Count(bad_id.err, "job id 'bad id' must be 1 to 128 letters") == 1);
  JobClient client(daemon->endpoint(), WithToken());
  v1::StartJobRequest request;
  request.set_job_id("no-hosts");
  request.add_program("true");
  request.set_working_dir("/");
  Status no_hosts = client.Start(request, 10s);
  CHECK(no_hosts.code() == StatusCode::kInvalidArgument);
  CHECK(Count(no_hosts.message(), "names none of the job's 0 hosts") == 1);
  request.add_hosts(daemon->endpoint());
  request.set_working_dir("relative");
  CHECK(client.Start(request, 10s).code() == StatusCode::kInvalidArgument);
  request.set_working_dir("/");
  // The daemon reads none of the agent's options: the agent itself refuses the submitter's.
  request.set_job_id("resubmitted");
  request.add_agent_args("--hosts=elsewhere");
  REQUIRE(client.Start(request, 10s).ok());
  std::string output;
  auto ended = client.Attach(
      "resubmitted", /*follow=*/true,
      [&](v1::JobOutput::Stream, std::string_view data) { output += data; }, [](int64_t) {});
  REQUIRE(ended.ok());
  REQUIRE(ended->has_value());
  CHECK((*ended)->status() == 2);
  CHECK(Count(output, "--hosts is the submitter's option, not a hosted job's agent's") == 1);
  auto served = Submit(*daemon, {"sh", "-c", "echo still serving"});
  CHECK(served.code() == 0);
  CHECK(Count(served.out, "[rank0]: still serving") == 1);
}

TEST_CASE("a job id that runs on the daemon already is refused") {
  auto daemon = JobDaemon();
  const std::string marker = "dup-" + std::to_string(::getpid());
  auto first = Submit(*daemon, {"--detach", "--rdzv_id=" + marker, "sleep", "60"});
  REQUIRE(first.code() == 0);
  auto second = Submit(*daemon, {"--rdzv_id=" + marker, "true"});
  CHECK(second.code() == 1);
  CHECK(Count(second.err, "job " + marker + " is running here already") == 1);
  CHECK(JobCommand(*daemon, "cancel", {marker}).code() == 0);
  CHECK(AwaitNoProcesses("--rdzv_id=" + marker));
}

TEST_CASE("stopping the daemon cancels the jobs it runs and leaves no process") {
  auto daemon = JobDaemon();
  const std::string marker = "daemon-stop-" + std::to_string(::getpid());
  auto started = Submit(*daemon, {"--detach", "--nproc_per_node=2", "sh", "-c",
                                  "while :; do sleep 0.1; done", marker});
  REQUIRE(started.code() == 0);
  REQUIRE(AwaitProcesses(marker, 3));  // the agent and its two workers
  daemon->process().Signal(SIGTERM);
  auto exit = daemon->process().Wait(30s);
  REQUIRE(exit.has_value());
  CHECK(exit->exit_code == 0);
  CHECK(AwaitNoProcesses(marker, nullptr, -1, 5s));
}

TEST_CASE("attach, logs, cancel and status of a job the daemon does not hold say so") {
  auto daemon = JobDaemon();
  for (const char* command : {"attach", "logs", "cancel", "status"}) {
    auto result = JobCommand(*daemon, command, {"no-such-job"});
    INFO(command << ": " << result.err);
    CHECK(result.code() == 1);
    CHECK(Count(result.err, "holds no job no-such-job") == 1);
  }
  auto no_daemon = RunDdprun({"attach", "some-job", "--host=127.0.0.1:1"});
  CHECK(no_daemon.code() == 1);
  CHECK(Count(no_daemon.err, "host 127.0.0.1:1: cannot reach its ddprund") == 1);
}

TEST_CASE("submitting to hosts refuses bad flags with one line and exit status 2") {
  ScratchDir dir;
  WriteFile(dir / "empty-hostfile", "# nobody\n\n");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--detach", "true"}, "--detach is for jobs on many hosts; give --hosts"},
      {{"--export=NONE", "true"}, "--export is for jobs on many hosts"},
      {{"--hosts=a,,b", "true"}, "--hosts must list HOST[:PORT] separated by commas"},
      {{"--hosts=a,a:29400", "true"}, "host a:29400 is given twice"},
      {{"--hosts=a:http", "true"}, "'a:http' is not HOST or HOST:PORT"},
      {{"--hosts=a", "--hostfile=" + dir / "empty-hostfile", "true"}, "not both"},
      {{"--hostfile=" + dir / "empty-hostfile", "true"}, "lists no host"},
      {{"--hostfile=" + dir / "missing", "true"}, "cannot read --hostfile "},
      {{"--hosts=a,b", "--nnodes=3", "true"}, "--nnodes=3 does not allow the 2 hosts given"},
      {{"--hosts=a", "--node_rank=0", "true"}, "--node_rank is one host's"},
      {{"--hosts=a", "--standalone", "true"}, "--standalone runs one node here"},
      {{"--hosts=a", "--metrics_port=0", "true"}, "the hosts' daemons serve the job's metrics"},
      {{"--hosts=a", "--export=ALL,9X=1", "true"}, "--export must be ALL, NONE or a list"},
      {{"--hosts=a"}, "no program to run"},
      {{"attach"}, "JOB is required"},
      {{"logs", "j", "--rank=-1"}, "--rank"},
  };
  for (const auto& [args, message] : cases) {
    auto result = RunDdprun(args);
    INFO(args.front() << " -> " << result.err);
    CHECK(result.code() == 2);
    CHECK(Count(result.err, message) == 1);
    CHECK(Lines(result.err).size() == 1);
  }
}

TEST_CASE("at a terminal, a submitted job's workers get terminals and a progress bar shows live") {
  auto daemon = JobDaemon();
  ScratchDir dir;
  const std::string fifo = dir / "go_on";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int go_on = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // so the worker's open never blocks
  REQUIRE(go_on >= 0);
  const std::string bar =
      "for i in 1 2 3; do printf '\\rprogress %d/3' $i; read x < \"$0\"; done; echo";
  TerminalProcess submitter(SubmitCommand(*daemon, {"/bin/sh", "-c", bar, fifo}));
  // Each state must show at the submitter while the bar waits to draw the next: it crossed the
  // worker's terminal, the agent, the daemon and the submitter without waiting for a line's end.
  for (int state = 1; state <= 3; ++state) {
    REQUIRE(submitter.WaitFor("progress " + std::to_string(state) + "/3", 10s));
    REQUIRE(::write(go_on, "\n", 1) == 1);
  }
  auto exit = submitter.Wait();
  ::close(go_on);
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  CHECK(Count(submitter.screen(), "progress 3/3\n") == 1);
  TerminalProcess described(SubmitCommand(*daemon, {kTestWorker, "terminal"}), 30, 100);
  REQUIRE(described.Wait());
  INFO(described.screen());
  // As on one node: rank 0's input is its terminal too, as large as the submitter's.
  CHECK(Count(described.screen(), "[rank0]: stdin=1 stdout=1 stderr=1 rows=30 cols=100\n") == 1);
}

TEST_CASE(
    "a submitted job runs in the submitter's directory with its environment, as --export says") {
  auto daemon = JobDaemon();
  ScratchDir dir;
  const std::string show = "echo \"travel=$DDPRUN_TEST_TRAVEL set=$DDPRUN_TEST_SET pwd=$PWD\"";
  const std::vector<std::string> in_dir = {"/usr/bin/env",
                                           "-C",
                                           dir.path(),
                                           "DDPRUN_TEST_TRAVEL=yes",
                                           kDdprun,
                                           "--token-file=" + TokenFile(),
                                           "--hosts=" + daemon->endpoint()};
  auto all = Run(in_dir + std::vector<std::string>{"sh", "-c", show}, {}, 60s);
  INFO(all.err);
  CHECK(Count(all.out, "[rank0]: travel=yes set= pwd=" + dir.path() + "\n") == 1);
  auto none = Run(in_dir + std::vector<std::string>{"--export=NONE", "sh", "-c", show}, {}, 60s);
  CHECK(Count(none.out, "[rank0]: travel= set= pwd=" + dir.path() + "\n") == 1);
  auto listed =
      Run(in_dir + std::vector<std::string>{"--export=DDPRUN_TEST_SET=given", "sh", "-c", show}, {},
          60s);
  CHECK(Count(listed.out, "[rank0]: travel= set=given pwd=" + dir.path() + "\n") == 1);
}

TEST_CASE("a program missing on the host fails the start, naming the host and the program") {
  auto daemon = JobDaemon();
  auto missing = Submit(*daemon, {"./no-such-program"});
  CHECK(missing.code() == 1);
  CHECK(Count(missing.err,
              "host " + daemon->endpoint() + ": program './no-such-program' does not exist") == 1);
  CHECK(Count(missing.err, "nothing was started") == 1);
  CHECK(Lines(missing.err).size() == 1);
}

TEST_CASE("a submitter killed mid-job leaves the job running, and attach picks it up again") {
  auto daemon = JobDaemon();
  ScratchDir dir;
  const std::string fifo = dir / "go_on";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const int go_on = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(go_on >= 0);
  const std::string id = "orphaned-" + std::to_string(::getpid());
  ChildProcess submitter(SubmitCommand(
      *daemon,
      {"--rdzv_id=" + id, "sh", "-c", "echo before; read x < \"$0\"; echo after; exit 5", fifo}));
  REQUIRE(submitter.WaitForStdoutLine(
      [](const std::string& line) { return line == "[rank0]: before"; }, 30s));
  submitter.Signal(SIGKILL);
  REQUIRE(submitter.Wait(10s));
  // The job goes on without it.
  CHECK(ProcessesMentioning("--rdzv_id=" + id).size() >= 1);
  REQUIRE(::write(go_on, "\n", 1) == 1);
  auto attached = JobCommand(*daemon, "attach", {id});
  ::close(go_on);
  INFO(attached.out << attached.err);
  CHECK(attached.code() == 5);
  CHECK(attached.out == "[rank0]: before\n[rank0]: after\n");
}

TEST_CASE(
    "a line typed at the submitter's terminal reaches rank 0 of a submitted job, only rank 0") {
  auto daemon = JobDaemon();
  const std::string script =
      "echo \"ready $RANK\"; if read line; then echo \"got $line\"; else echo \"end of input\"; fi";
  TerminalProcess submitter(
      SubmitCommand(*daemon, {"--nproc_per_node=2", "/bin/sh", "-c", script}));
  REQUIRE(submitter.WaitFor("[rank0]: ready 0\n"));
  REQUIRE(submitter.WaitFor("[rank1]: end of input\n"));  // rank 1 reads /dev/null
  submitter.Type("hello there\n");
  REQUIRE(submitter.WaitFor("[rank0]: got hello there\n"));
  auto exit = submitter.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
}

TEST_CASE("input piped into the submitter reaches rank 0 of a submitted job, then its end") {
  auto daemon = JobDaemon();
  std::vector<std::string> command = SubmitCommand(
      *daemon, {"/bin/sh", "-c", "while read line; do echo \"got $line\"; done; echo done"});
  command.insert(command.begin(), {"/bin/sh", "-c", "printf 'one\\ntwo\\n' | exec \"$0\" \"$@\""});
  auto piped = Run(command, {}, 60s);
  INFO(piped.err);
  CHECK(piped.code() == 0);
  CHECK(piped.out == "[rank0]: got one\n[rank0]: got two\n[rank0]: done\n");
}
