// When ddprun gives up: the root cause, the other failures, and the exit status.
#include <signal.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

TEST_CASE("a worker killed by a signal is reported with the signal's name: ddprun exits 128+N") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "kill-self", "1",
                            std::to_string(SIGSEGV)}));
  CHECK(result.code() == 128 + SIGSEGV);
  CHECK(Count(result.err, "Root cause (first observed failure):") == 1);
  CHECK(Count(result.err, "rank       : 1 (local_rank 1)") == 1);
  CHECK(Count(result.err, "exit       : signal SIGSEGV (11)") == 1);
  CHECK(Count(result.err, " FAILED") == 1);
}

TEST_CASE("the root cause's exit code becomes ddprun's, and its error file is shown") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=3", kTestWorker, "error-file", "2"}));
  CHECK(result.code() == 1);
  CHECK(Count(result.err, "rank       : 2 (local_rank 2)") == 1);
  CHECK(Count(result.err, "error      : ValueError: the loss is NaN") == 1);
  CHECK(Count(result.err, "traceback  :\n    Traceback (most recent call last): ...") == 1);
  // Without --log_dir the error files are in a flat temporary directory (run_log_layout.h).
  CHECK(Count(result.err, "/attempt_0.2.error.json") == 1);
}

TEST_CASE("ddprun exits 0 only when every worker did") {
  CHECK(Run(Ddprun({"--standalone", "--nproc_per_node=3", kTestWorker, "exit", "0", "0"})).code() ==
        0);
  auto one_failed =
      Run(Ddprun({"--standalone", "--nproc_per_node=3", kTestWorker, "exit", "2", "5"}));
  CHECK(one_failed.code() == 5);
  CHECK(Count(one_failed.err, "exit       : exit code 5") == 1);
}

TEST_CASE(
    "a failed run without --log_dir keeps the error files it wrote and says where, and a run "
    "that succeeds or fails having written nothing keeps nothing") {
  ScratchDir tmp;
  auto failed = Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "error-file", "1"}),
                    {{"TMPDIR", tmp.path()}});
  CHECK(failed.code() == 1);
  const std::string said = "ddprun: logs kept in " + tmp.path() + "/ddprun_";
  REQUIRE(Count(failed.err, said) == 1);
  // The line comes after the report, and names the folder that holds the error files.
  CHECK(failed.err.find(said) > failed.err.rfind(" FAILED"));
  const size_t at = failed.err.find(said) + std::string("ddprun: logs kept in ").size();
  const std::string kept = failed.err.substr(at, failed.err.find(' ', at) - at);
  CHECK(std::filesystem::is_regular_file(kept + "/attempt_0.1.error.json"));

  auto succeeded =
      Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "exit", "0", "0"}),
          {{"TMPDIR", tmp.path()}});
  CHECK(succeeded.code() == 0);
  CHECK(Count(succeeded.err, "logs kept") == 0);
  auto failed_silently =
      Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "exit", "1", "3"}),
          {{"TMPDIR", tmp.path()}});
  CHECK(failed_silently.code() == 3);
  CHECK(Count(failed_silently.err, " FAILED") == 1);
  CHECK(Count(failed_silently.err, "logs kept") == 0);
  size_t folders = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(tmp.path())) {
    ++folders;
  }
  CHECK(folders == 1);  // the first failed run's only
}
