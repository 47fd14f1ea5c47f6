// Hang detection on one node (--hang_timeout): real workers that stop (a C++ rank blocked in its
// own code while the others wait in a collective, a Python rank stuck in a function, a rank
// stopped with SIGSTOP), found from the progress they report, named, their stacks taken before
// the stop, then the restart; and no alarm for a job that is slow but steady.
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "integration/launcher/launcher_test_support.h"
#include "support/skip.h"
#include "support/test_paths.h"

using namespace ddprun::testing;

namespace {

const std::string kCollectivesWorker = paths::kCollectivesWorker;
const std::string kProgressWorker = std::string(paths::kTestWorkersDir) + "/progress_worker.py";

bool HaveGdb() { return !FindOnPath("gdb").empty(); }

std::vector<std::string> HangFlags(const ScratchDir& logs, const std::string& run_id) {
  return {"--hang_timeout=2", "--hang_first_timeout=30", "--log_dir=" + logs.path(),
          "--run_id=" + run_id};
}

// The pid a stacks file says the hung worker had.
pid_t PidInStacks(const std::string& stacks) {
  std::smatch match;
  if (!std::regex_search(stacks, match, std::regex(R"(pid ([0-9]+)\))"))) return -1;
  return std::stoi(match[1]);
}

}  // namespace

namespace {

// A job with a 2 s hang timeout and one restart in which rank `hung` stops. Checks that it
// completes, every rank's "done <steps> steps", one restart, and that the report named the rank
// within the timeout plus 1 s. Returns the result and the text of the hung rank's stacks file.
struct HungJob {
  RunResult result;
  std::string stacks;
};
HungJob RunHungJob(const ScratchDir& logs, const std::string& run_id, int nproc, int hung,
                   const std::vector<std::string>& program, int steps) {
  auto flags = HangFlags(logs, run_id);
  flags.insert(flags.end(), {"--nproc_per_node=" + std::to_string(nproc), "--max_restarts=1"});
  flags.insert(flags.end(), program.begin(), program.end());
  HungJob job{Run(Ddprun(flags), {}, std::chrono::seconds(90)), ""};
  const RunResult& result = job.result;
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  const double stalled = StalledSeconds(result.err, hung);
  CHECK(stalled >= 2.0);
  CHECK(stalled <= 3.0);
  CHECK(Count(result.err, "(restart 1 of 1)") == 1);
  for (int rank = 0; rank < nproc; ++rank) {
    CHECK(Count(result.out, "[rank" + std::to_string(rank) + "]: done " + std::to_string(steps) +
                                " steps") == 1);
  }
  job.stacks =
      ReadFile(logs.path() + "/" + run_id + "/attempt_0/" + std::to_string(hung) + "/stacks.txt");
  return job;
}

}  // namespace

TEST_CASE(
    "a C++ rank that stops calling collectives is named within the timeout plus 1 s, its "
    "stacks name the function, and the job restarts and completes") {
  if (!HaveGdb()) return SkipTest("gdb is not installed here: no native stacks to look at");
  ScratchDir logs;
  auto [result, stacks] =
      RunHungJob(logs, "cxx", 3, 1, {kCollectivesWorker, "train", "200", "pause", "1", "10"}, 200);
  INFO(result.out << result.err);
  // The others wait for it inside their next collective.
  CHECK(Count(result.err, "the other 2 ranks at step 99, waiting in a collective") == 1);
  CHECK(stacks.find("StuckInUserCode") != std::string::npos);
  CHECK(stacks.find("hang: rank 1") == 0);
  // The innermost frames are quoted at the console.
  CHECK(Count(result.err,
              "ddprun: stacks of rank 1: " + logs.path() + "/cxx/attempt_0/1/stacks.txt") == 1);
  CHECK(Count(result.err, "StuckInUserCode") >= 1);
  CHECK(Count(result.err, "hung: no progress for") == 1);
  // Only the hung rank's stacks were taken.
  CHECK_FALSE(std::filesystem::exists(logs.path() + "/cxx/attempt_0/0/stacks.txt"));
}

TEST_CASE(
    "a Python rank stuck in a function is named, its Python stacks show the function, and "
    "the job restarts and completes") {
  ScratchDir logs;
  auto [result, stacks] = RunHungJob(logs, "py", 3, 1, {kProgressWorker, "200", "1", "0.05"}, 200);
  INFO(result.out << result.err);
  CHECK(stacks.find("== Python stacks of pid") != std::string::npos);
  CHECK(stacks.find("in stuck_in_python_function") != std::string::npos);
  CHECK(Count(result.err, "in stuck_in_python_function") >= 1);
}

TEST_CASE(
    "a rank stopped with SIGSTOP is named, its stacks say it was stopped, and it is gone "
    "after the restart") {
  ScratchDir logs;
  auto [result, stacks] =
      RunHungJob(logs, "stop", 2, 0, {kCollectivesWorker, "train", "100", "stop", "0", "10"}, 100);
  INFO(result.out << result.err);
  CHECK(stacks.find("the worker was stopped (SIGSTOP") != std::string::npos);
  if (HaveGdb()) CHECK(stacks.find("raise") != std::string::npos);
  const pid_t stopped = PidInStacks(stacks);
  REQUIRE(stopped > 0);
  CHECK(::kill(stopped, 0) != 0);  // SIGCONT, SIGTERM: it ended with the group
}

TEST_CASE("a job that progresses slowly but steadily raises no alarm") {
  // A step every 0.7 s against a 1.5 s timeout, reported through the runtime's page; and a
  // Python job reporting through DDPRUN_PROGRESS_FILE at the same pace.
  auto cxx = Run(Ddprun({"--nproc_per_node=2", "--hang_timeout=1.5", "--hang_first_timeout=30",
                         kCollectivesWorker, "train", "8", "none", "0", "700"}),
                 {}, std::chrono::seconds(60));
  INFO(cxx.out << cxx.err);
  CHECK(cxx.code() == 0);
  CHECK(Count(cxx.err, "hang") == 0);
  auto python = Run(Ddprun({"--nproc_per_node=2", "--hang_timeout=1.5", "--hang_first_timeout=30",
                            kProgressWorker, "8", "-1", "0.7"}),
                    {}, std::chrono::seconds(60));
  INFO(python.out << python.err);
  CHECK(python.code() == 0);
  CHECK(Count(python.err, "hang") == 0);
  CHECK(Count(python.out, "done 8 steps") == 2);
}

TEST_CASE("a rank that destroyed its process group may stay quiet past the timeout") {
  // Both ranks destroy their group after the last step, then stay 3 s (a last checkpoint)
  // against a 1.5 s timeout.
  auto result = Run(Ddprun({"--nproc_per_node=2", "--hang_timeout=1.5", "--hang_first_timeout=30",
                            kCollectivesWorker, "train", "5", "linger", "0", "10"}),
                    {}, std::chrono::seconds(60));
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.err, "hang") == 0);
  CHECK(Count(result.out, "done 5 steps") == 2);
}

TEST_CASE("output counts as progress only with --hang_progress=output") {
  const std::vector<std::string> ticking = {
      "--nproc_per_node=1",
      "--hang_timeout=1",
      "--hang_first_timeout=1",
      "--no_python",
      "/bin/sh",
      "-c",
      "for i in 1 2 3 4 5 6 7 8; do echo tick $i; sleep 0.4; done"};
  auto flags = ticking;
  flags.insert(flags.begin(), "--hang_progress=output");
  auto counted = Run(Ddprun(flags), {}, std::chrono::seconds(60));
  INFO(counted.out << counted.err);
  CHECK(counted.code() == 0);
  CHECK(Count(counted.err, "hang") == 0);
  // Without it the ticks are not progress: no first progress within hang_first_timeout.
  ScratchDir logs;  // the failed run's logs are kept: here
  flags = ticking;
  flags.insert(flags.begin(), "--log_dir=" + logs.path());
  auto uncounted = Run(Ddprun(flags), {}, std::chrono::seconds(60));
  INFO(uncounted.out << uncounted.err);
  CHECK(uncounted.code() == 1);
  CHECK(Count(uncounted.err, "hang: rank 0 (") == 1);
  CHECK(Count(uncounted.err, "with no progress since it started") == 1);
  CHECK(Count(uncounted.err, "hung: no progress in the") == 1);
}

TEST_CASE("the hang action stacks reports the hang and leaves the job running") {
  ScratchDir logs;
  auto flags = HangFlags(logs, "report");
  flags.insert(flags.end(), {"--hang_action=stacks", "--nproc_per_node=2", "--max_restarts=1",
                             kCollectivesWorker, "train", "40", "stall", "1", "10"});
  flags[0] = "--hang_timeout=1.5";
  auto result = Run(Ddprun(flags), {}, std::chrono::seconds(90));
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.err, "hang: rank 1 (") == 1);
  CHECK(std::filesystem::exists(logs.path() + "/report/attempt_0/1/stacks.txt"));
  CHECK(Count(result.err, "restarting") == 0);
  CHECK_FALSE(std::filesystem::exists(logs.path() + "/report/attempt_1"));
  CHECK(Count(result.out, "done 40 steps") == 2);
}

TEST_CASE("the hang action fail ends the job at the first hang, with the stacks in the report") {
  ScratchDir logs;
  auto flags = HangFlags(logs, "fail");
  flags.insert(flags.end(), {"--hang_action=fail", "--nproc_per_node=2", "--max_restarts=3",
                             kCollectivesWorker, "train", "100", "pause", "1", "10"});
  auto result = Run(Ddprun(flags), {}, std::chrono::seconds(90));
  INFO(result.out << result.err);
  CHECK(result.code() == 1);
  CHECK(Count(result.err, "restarting") == 0);
  CHECK(Count(result.err, "exit       : hung: no progress for") == 1);
  CHECK(Count(result.err, "stacks     : " + logs.path() + "/fail/attempt_0/1/stacks.txt") == 1);
}

TEST_CASE("a hang timeout that is not a number of seconds is a usage error") {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--hang_timeout=soon"}, "--hang_timeout must be a number of seconds"},
      {{"--hang_timeout=-1"}, "--hang_timeout must be a number of seconds"},
      {{"--hang_first_timeout=x"}, "--hang_first_timeout must be a number of seconds"},
      {{"--rdzv_conf=hang_timeout=-2"}, "hang_timeout must be a positive number of seconds"},
      {{"--hang_action=ignore"}, "--hang_action"},
      {{"--hang_progress=stdout"}, "--hang_progress"}};
  for (const auto& [flags, message] : cases) {
    auto args = flags;
    args.push_back(kTestWorker);
    auto result = Run(Ddprun(args));
    INFO(flags.front() << ": " << result.err);
    CHECK(result.code() == 2);
    CHECK(Count(result.err, message) == 1);
    CHECK(Lines(result.err).size() == 1);
  }
  auto from_variable = Run(Ddprun({kTestWorker}), {{"PET_HANG_TIMEOUT", "later"}});
  CHECK(from_variable.code() == 2);
  CHECK(Count(from_variable.err,
              "--hang_timeout must be a number of seconds, 0 or more, not 'later'") == 1);
}

TEST_CASE(
    "every worker has DDPRUN_PROGRESS_FILE, and the page and the Python hook only with "
    "--hang_timeout") {
  ScratchDir logs;
  auto plain = Run(Ddprun({"--nproc_per_node=2", "--log_dir=" + logs.path(), "--run_id=plain",
                           kTestWorker, "env"}),
                   {{"PYTHONPATH", "/mine"}});
  REQUIRE(plain.code() == 0);
  for (int rank = 0; rank < 2; ++rank) {
    auto env = RankVariables(plain.out, rank);
    CHECK(env["DDPRUN_PROGRESS_FILE"] ==
          logs.path() + "/plain/attempt_0/" + std::to_string(rank) + "/progress");
    CHECK(env["DDPRUN_PROGRESS_FD"] == "<unset>");
    CHECK(env["PYTHONPATH"] == "/mine");
  }
  auto watched = Run(Ddprun({"--nproc_per_node=1", "--hang_timeout=60", "--log_dir=" + logs.path(),
                             "--run_id=watched", kTestWorker, "env"}),
                     {{"PYTHONPATH", "/mine"}});
  REQUIRE(watched.code() == 0);
  auto env = RankVariables(watched.out, 0);
  CHECK(std::stoi(env["DDPRUN_PROGRESS_FD"]) >= 10);
  CHECK(env["DDPRUN_PYTHON_STACKS_DIR"] == logs.path() + "/watched/attempt_0/0");
  // The hook first, then what the user had.
  CHECK(env["PYTHONPATH"] == logs.path() + "/watched/python:/mine");
  CHECK(std::filesystem::exists(logs.path() + "/watched/python/sitecustomize.py"));
}

TEST_CASE("ddprun's Python hook runs the user's own sitecustomize after arming faulthandler") {
  ScratchDir dir;
  std::ofstream(dir / "sitecustomize.py") << "print('user sitecustomize ran', flush=True)\n";
  std::ofstream(dir / "show.py")
      << "import sys\nprint('armed:', hasattr(sys, '_ddprun_python_stacks'), flush=True)\n";
  auto result = Run(Ddprun({"--hang_timeout=60", dir / "show.py"}), {{"PYTHONPATH", dir.path()}});
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  CHECK(RankLines(result.out, 0) ==
        std::vector<std::string>{"user sitecustomize ran", "armed: True"});
}
