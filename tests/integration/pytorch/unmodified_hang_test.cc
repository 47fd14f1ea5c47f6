// Hang and straggler detection in unmodified PyTorch DDP scripts (tests/pytorch/ddp_steps.py),
// under the real ddprun with real torch: ddprun's Python hook counts the collectives, DDP's
// buckets and the optimizer steps with no line in the script, so a rank stuck outside a
// collective is named within the timeout plus a second, its Python stack taken, the group
// restarted; a slow but steady job raises no alarm; a slow rank is named, and named again when
// it recovers; and what the script computes is the same with the hook as without.
#include <array>
#include <catch2/catch.hpp>
#include <regex>

#include "integration/launcher/launcher_test_support.h"
#include "pytorch_support.h"

using namespace ddprun::testing;

namespace {

RunResult RunSteps(int nproc, std::vector<std::string> flags,
                   const std::vector<std::string>& script_args) {
  flags.insert(flags.begin(), "--nproc_per_node=" + std::to_string(nproc));
  flags.push_back(Script("ddp_steps.py"));
  flags.insert(flags.end(), script_args.begin(), script_args.end());
  return Run(Ddprun(flags), PytorchEnv(), 240s);
}

// A 2-rank job with a 2 s hang timeout and one restart, in which rank 1 hangs in the first
// attempt as `how` says: it must be named within the timeout plus 1 s, after `steps_done`
// optimizer steps, its Python stack (in the script's main) saved, and both ranks must finish in
// the second attempt.
void CheckHangFound(const std::string& how, int steps_done, const std::string& run_id) {
  ScratchDir logs;
  auto result = RunSteps(2,
                         {"--hang_timeout=2", "--hang_first_timeout=120", "--max_restarts=1",
                          "--log_dir=" + logs.path(), "--run_id=" + run_id},
                         {"--steps", "100", "--hang", how, "--at", "50"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  const double stalled = StalledSeconds(result.err, 1);
  CHECK(stalled >= 2.0);
  CHECK(stalled <= 3.0);
  CHECK(Count(result.err, " at step " + std::to_string(steps_done)) >= 1);
  CHECK(Count(result.err, "(restart 1 of 1)") == 1);
  for (int rank = 0; rank < 2; ++rank) {
    CHECK(Count(result.out, "[rank" + std::to_string(rank) + "]: done 100 steps") == 1);
  }
  const std::string stacks = ReadFile(logs.path() + "/" + run_id + "/attempt_0/1/stacks.txt");
  INFO(stacks);
  CHECK(Count(stacks, "ddp_steps.py") >= 1);
  CHECK(std::regex_search(stacks, std::regex(R"(line [0-9]+ in main)")));
}

}  // namespace

TEST_CASE("an unmodified DDP script's rank asleep in its own code is named and restarted",
          "[ddprun][torch_version]") {
  if (!HavePytorch()) return;
  CheckHangFound("sleep", 50, "asleep");  // before its 51st step
}

TEST_CASE("an unmodified DDP script's rank stopped between backward and step is named",
          "[torch_version]") {
  if (!HavePytorch()) return;
  // Its backward's bucket all-reduces are over, so it waits in no collective while the other
  // rank waits in the next backward's.
  CheckHangFound("after_backward", 50, "afterbackward");
}

TEST_CASE("an unmodified script's rank that never enters the others' all_reduce is named",
          "[torch_version]") {
  if (!HavePytorch()) return;
  CheckHangFound("skip", 51, "skipped");  // after its 51st step
}

TEST_CASE("a PyTorch job at one step every 0.7 s raises no alarm over a 1.5 s hang timeout") {
  if (!HavePytorch()) return;
  auto result = RunSteps(2, {"--hang_timeout=1.5", "--max_restarts=0"},
                         {"--steps", "6", "--step_seconds", "0.7"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.err, "hang:") == 0);
  CHECK(Count(result.out, ": done 6 steps") == 2);
}

TEST_CASE("an unmodified script quiet after destroy_process_group raises no alarm", "[ddprun]") {
  if (!HavePytorch()) return;
  // 3 s after the group is destroyed (a last checkpoint, the interpreter's teardown) against a
  // 1.5 s timeout.
  auto result = RunSteps(2, {"--hang_timeout=1.5", "--max_restarts=0"},
                         {"--steps", "6", "--linger_seconds", "3"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.err, "hang:") == 0);
  CHECK(Count(result.out, ": done 6 steps") == 2);
}

TEST_CASE("a slow rank of an unmodified script is named once, and again when it recovers",
          "[ddprun][torch_version]") {
  if (!HavePytorch()) return;
  // Rank 2 takes 0.1 s more a step until step 40, then keeps pace.
  auto result = RunSteps(3, {"--straggler_ratio=1.5"},
                         {"--steps", "100", "--step_seconds", "0.03", "--slow_seconds", "0.1",
                          "--rank_at_fault", "2", "--at", "40"});
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(std::regex_search(
      result.err,
      std::regex(R"(ddprun: straggler: rank 2 \([^,]+, local 2\): [0-9.]+ ms a step, the job's )"
                 R"(median [0-9.]+ ms\n)")));
  CHECK(Count(result.err, "straggler: rank ") == 1);
  CHECK(Count(result.err, "ddprun: straggler recovered: rank 2 (") == 1);
  CHECK(Count(result.out, ": done 100 steps") == 3);
}

// ddp_bucket_counts.py's "buckets B counted N finished M open_after_backward K" of each rank.
std::vector<std::array<int, 4>> BucketCounts(const std::string& output) {
  std::vector<std::array<int, 4>> counts;
  const std::regex line(R"(buckets (\d+) counted (\d+) finished (\d+) open_after_backward (\d+))");
  for (int rank = 0; rank < 2; ++rank) {
    for (const auto& text : RankLines(output, rank)) {
      std::smatch match;
      if (std::regex_match(text, match, line)) {
        counts.push_back(
            {std::stoi(match[1]), std::stoi(match[2]), std::stoi(match[3]), std::stoi(match[4])});
      }
    }
  }
  return counts;
}

TEST_CASE("each of DDP's bucket all-reduces counts as a collective, finished by the backward's end",
          "[ddprun][torch_version]") {
  if (!HavePytorch()) return;
  auto result =
      Run(Ddprun({"--nproc_per_node=2", "--hang_timeout=60", Script("ddp_bucket_counts.py")}),
          PytorchEnv(), 240s);
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  // Every hook point is where the hook looks for it in this torch: nothing goes unwatched.
  CHECK(Count(result.out + result.err, "cannot watch") == 0);
  // B buckets a step (torch 1.13 forms 3 of this model, 2.15 4), 10 steps: 10 B all-reduces
  // counted, all finished when each backward returns.
  const auto counts = BucketCounts(result.out);
  REQUIRE(counts.size() == 2);
  for (const auto& [buckets, counted, finished, open_after_backward] : counts) {
    CHECK(buckets >= 2);
    CHECK(counted == 10 * buckets);
    CHECK(finished == counted);
    CHECK(open_after_backward == 0);
  }
}

TEST_CASE("a hook point a torch has moved is said in one line, and the job runs as before",
          "[ddprun][torch_version]") {
  if (!HavePytorch()) return;
  // tests/pytorch/hook_point_moved makes DDP take no process_group, as a future torch might.
  auto env = PytorchEnv();
  env["PYTHONPATH"] = kPytorchScripts + "/hook_point_moved";
  auto result =
      Run(Ddprun({"--nproc_per_node=2", "--hang_timeout=60", Script("ddp_bucket_counts.py")}), env,
          240s);
  INFO(result.out << result.err);
  CHECK(result.code() == 0);
  CHECK(Count(result.out + result.err, "cannot watch") == 1);
  CHECK(std::regex_search(result.err,
                          std::regex("ddprun: hang detection cannot watch DDP's gradient buckets "
                                     "one by one in torch [0-9][^ ]* \\(DistributedDataParallel "
                                     "takes no process_group\\): each backward counts as one "
                                     "collective\n")));
  // Each backward is one collective, finished by the next step, instead.
  const auto counts = BucketCounts(result.out);
  REQUIRE(counts.size() == 2);
  for (const auto& [buckets, counted, finished, open_after_backward] : counts) {
    CHECK(counted == 10);
    CHECK(finished == 10);
    CHECK(open_after_backward == 1);
  }
}

TEST_CASE("the hook counts without changing what an unmodified script computes",
          "[torch_version]") {
  if (!HavePytorch()) return;
  auto weights = [](const RunResult& result) {
    std::smatch match;
    std::regex_search(result.out, match, std::regex(R"(\[rank0\]: weights (\S+))"));
    return match.size() > 1 ? match[1].str() : std::string("none");
  };
  auto plain = RunSteps(2, {}, {"--steps", "30", "--print_weights"});
  auto hooked = RunSteps(2, {"--hang_timeout=60"}, {"--steps", "30", "--print_weights"});
  INFO(plain.out << plain.err << hooked.out << hooked.err);
  REQUIRE(plain.code() == 0);
  REQUIRE(hooked.code() == 0);
  CHECK(weights(plain) != "none");
  CHECK(weights(hooked) == weights(plain));
}
