// examples/train under ddprun: it converges, and a run whose worker is killed with SIGKILL in the
// middle, restarted by ddprun and resumed from its checkpoint, ends with the same parameters,
// bit for bit, as a run that was never interrupted.
#include <catch2/catch.hpp>

#include "integration/launcher/launcher_test_support.h"
#include "support/test_paths.h"

using namespace ddprun::testing;

namespace {

const std::string kTrain = paths::kTrainExample;

std::string Fingerprint(const std::string& output) {
  for (const auto& line : RankLines(output, 0)) {
    if (line.rfind("parameters fingerprint ", 0) == 0) return line.substr(23);
  }
  return "none";
}

}  // namespace

TEST_CASE("the example trains the seeds' model to a small held-out loss") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=2", kTrain, "--epochs", "3"}));
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  auto lines = RankLines(result.out, 0);
  auto summary = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("held-out loss", 0) == 0;
  });
  REQUIRE(summary != lines.end());
  float before = 0, after = 0;
  REQUIRE(std::sscanf(summary->c_str(), "held-out loss %f -> %f", &before, &after) == 2);
  CHECK(after < before / 10);
}

TEST_CASE("killed with SIGKILL mid-training, restarted and resumed: the same bits as no kill") {
  ScratchDir dir;
  const std::vector<std::string> training = {"--epochs",           "2", "--samples", "2048",
                                             "--checkpoint-every", "10"};
  auto args = [&](const std::string& checkpoints, std::vector<std::string> more) {
    std::vector<std::string> all = {"--standalone", "--nproc_per_node=2", "--max_restarts=1",
                                    kTrain,         "--checkpoint-dir",   checkpoints};
    all.insert(all.end(), training.begin(), training.end());
    all.insert(all.end(), more.begin(), more.end());
    return Ddprun(all);
  };
  auto clean = Run(args(dir / "clean", {}));
  INFO(clean.out << clean.err);
  REQUIRE(clean.code() == 0);
  auto killed = Run(args(dir / "killed", {"--kill-at-step", "25"}));
  INFO(killed.out << killed.err);
  REQUIRE(killed.code() == 0);
  CHECK(Count(killed.err, "signal SIGKILL") >= 1);  // rank 1 died, and ddprun restarted the job
  CHECK(Count(killed.out, "(resumed from step 20)") == 1);
  CHECK(Fingerprint(killed.out) == Fingerprint(clean.out));
  CHECK(Fingerprint(clean.out) != "none");
}

TEST_CASE("the classifier example learns its classes on two ranks") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=2", paths::kClassifyExample,
                            "--epochs", "2", "--samples", "4096", "--hidden", "128"}));
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  float before = 0, after = 0;
  for (const auto& line : RankLines(result.out, 0)) {
    std::sscanf(line.c_str(), "held-out accuracy %f -> %f", &before, &after);
  }
  CHECK(before < 0.3f);  // chance is 0.1
  CHECK(after > 0.8f);
}
