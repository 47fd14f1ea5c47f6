// Nothing a job starts outlives it: helpers a worker daemonises (setsid, a double fork) are
// ended when the job ends, through the job's cgroup and through the child subreaper alone; with
// the cgroup, even kill -9 of ddprun leaves none. A stopped worker ends within its grace. Shared
// memory a killed rank left in /dev/shm is removed when it is reaped.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "integration/launcher/launcher_test_support.h"
#include "support/skip.h"

using namespace ddprun::testing;

namespace {

// Each worker starts two helpers that escape its process group and session: one through
// setsid, one through a double fork; it prints "helper <pid>" for each, then "ready".
const std::string kStartHelpers =
    "setsid sleep 300 & echo \"helper $!\"; (sleep 301 & echo \"helper $!\"); echo ready; ";

// The helpers' pids from ddprun's output.
std::vector<pid_t> Helpers(const std::string& output) { return PidsAfter(output, "]: helper "); }

// The cgroup v2 path of `pid` ("" when it is gone).
std::string CgroupOf(pid_t pid) {
  std::ifstream cgroups("/proc/" + std::to_string(pid) + "/cgroup");
  std::string line;
  while (std::getline(cgroups, line)) {
    if (line.rfind("0::", 0) == 0) return line.substr(3);
  }
  return "";
}

}  // namespace

TEST_CASE("helpers a worker daemonised are ended when the job ends, with and without a cgroup") {
  for (const std::string cgroup : {"auto", "off"}) {
    INFO("DDPRUN_JOB_CGROUP=" << cgroup);
    const auto run = Run(Ddprun({"--nproc_per_node=2", "/bin/sh", "-c", kStartHelpers}),
                         {{"DDPRUN_JOB_CGROUP", cgroup}});
    KillOnExit cleanup{Helpers(run.out)};
    CHECK(run.code() == 0);
    REQUIRE(cleanup.pids.size() == 4);
    for (pid_t pid : cleanup.pids) CHECK(WaitForProcessGone(pid, 1s));
  }
}

TEST_CASE("helpers a worker daemonised are ended when the job fails and restarts") {
  // Attempt 0 fails (rank 1 exits 3, once rank 0 has started its helpers too) and leaves
  // helpers; the restart must not inherit them.
  ScratchDir dir;
  const std::string script =
      kStartHelpers + "touch \"$0.$RANK.$TORCHELASTIC_RESTART_COUNT\"; " +
      "if [ \"$TORCHELASTIC_RESTART_COUNT\" = 0 ] && [ \"$RANK\" = 1 ]; then "
      "while [ ! -e \"$0.0.0\" ]; do sleep 0.01; done; exit 3; fi; sleep 1";
  ChildProcess ddprun(
      Ddprun({"--nproc_per_node=2", "--max_restarts=1", "/bin/sh", "-c", script, dir / "started"}));
  auto restarted = ddprun.WaitForStdoutLine(
      [](const std::string& line) { return line.find("]: ready") != std::string::npos; });
  REQUIRE(restarted);
  // The first attempt's helpers are gone once the second attempt's workers run.
  for (int seen = 1; seen < 4; ++seen) {
    REQUIRE(ddprun.WaitForStdoutLine(
        [](const std::string& line) { return line.find("]: ready") != std::string::npos; }));
  }
  std::vector<pid_t> all = Helpers(ddprun.stdout_text());
  KillOnExit cleanup{all};
  REQUIRE(all.size() == 8);
  for (size_t i = 0; i < 4; ++i) CHECK(WaitForProcessGone(all[i], 1s));
  auto exit = ddprun.Wait();
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  cleanup.pids = Helpers(ddprun.stdout_text());
  for (pid_t pid : cleanup.pids) CHECK(WaitForProcessGone(pid, 1s));
}

TEST_CASE("kill -9 of ddprun leaves none of the helpers its workers daemonised") {
  ChildProcess ddprun(
      Ddprun({"--nproc_per_node=2", "/bin/sh", "-c", kStartHelpers + "exec sleep 300"}));
  for (int i = 0; i < 2; ++i) {
    REQUIRE(ddprun.WaitForStdoutLine(
        [](const std::string& line) { return line.find("]: ready") != std::string::npos; }));
  }
  KillOnExit cleanup{Helpers(ddprun.stdout_text())};
  REQUIRE(cleanup.pids.size() == 4);
  const std::string job_cgroup = "/ddprun-" + std::to_string(ddprun.pid());
  const std::string cgroup = CgroupOf(cleanup.pids[0]);
  if (cgroup.find(job_cgroup) == std::string::npos) {
    return SkipTest("no writable cgroup v2 hierarchy here (the helpers run in '" + cgroup +
                    "'): only the job's cgroup outlives a SIGKILL of ddprun");
  }
  ddprun.Signal(SIGKILL);
  REQUIRE(ddprun.Wait());
  for (pid_t pid : cleanup.pids) CHECK(WaitForProcessGone(pid, 10s));
}

TEST_CASE(
    "a stopped worker ends within its grace when the group stops, not by SIGKILL 30 s later") {
  // Rank 1 stops itself; rank 0 fails once /proc shows it stopped ("T"), which stops the group
  // (grace: 30 s, the default).
  ScratchDir dir;
  const std::string script =
      "if [ \"$RANK\" = 1 ]; then echo $$ > \"$0/pid\"; echo ready; kill -STOP $$; sleep 300; "
      "fi; until [ -s \"$0/pid\" ] && [ \"$(cut -d' ' -f3 \"/proc/$(cat \"$0/pid\")/stat\")\" = T "
      "]; "
      "do sleep 0.01; done; exit 3";
  ChildProcess ddprun(Ddprun({"--nproc_per_node=2", "/bin/sh", "-c", script, dir.path()}));
  REQUIRE(ddprun.WaitForStdoutLine(
      [](const std::string& line) { return line.find("]: ready") != std::string::npos; }));
  auto exit = ddprun.Wait(20s);
  REQUIRE(exit);
  CHECK(exit->exit_code == 3);
  CHECK(Count(ddprun.stderr_text(), "sending SIGKILL") == 0);
}

TEST_CASE("shared memory a rank killed mid-setup left in /dev/shm is removed when it is reaped") {
  const auto run = Run(Ddprun({"--nproc_per_node=1", kTestWorker, "killed-with-shm"}),
                       {{"DDPRUN_LOG_LEVEL", "info"}});
  INFO(run.out << run.err);
  CHECK(run.code() != 0);
  std::vector<std::string> names;
  for (const auto& line : Lines(run.out)) {
    const size_t at = line.find("]: shm /");
    if (at != std::string::npos) names.push_back(line.substr(at + 7));
  }
  REQUIRE(names.size() == 1);
  for (const auto& name : names) {
    INFO(name);
    CHECK_FALSE(std::filesystem::exists("/dev/shm" + name));
  }
  CHECK(Count(run.out + run.err, "removed 1 shared-memory name(s) rank 0 (pid ") == 1);
}

TEST_CASE("no child of ddprun is a zombie while its job runs") {
  // The worker lists ddprun's other children by their state (/proc/PID/stat's third field) and
  // cgroup: the cgroup's guardian among them, sleeping, and nothing "Z" (<defunct> in ps).
  const std::string script =
      "for child in $(cat /proc/$PPID/task/*/children); do [ \"$child\" = $$ ] && continue; "
      "echo \"child $(cut -d' ' -f3 /proc/$child/stat)\"; done; "
      "echo \"cgroup $(grep -c '/ddprun-' /proc/self/cgroup)\"";
  const auto run = Run(Ddprun({"--nproc_per_node=1", "/bin/sh", "-c", script}));
  INFO(run.out << run.err);
  REQUIRE(run.code() == 0);
  if (Count(run.out, "]: cgroup 1") == 0) {
    return SkipTest("no writable cgroup v2 hierarchy here: ddprun starts no child of its own");
  }
  CHECK(Count(run.out, "]: child S") == 1);  // the guardian
  CHECK(Count(run.out, "]: child ") == 1);
}
