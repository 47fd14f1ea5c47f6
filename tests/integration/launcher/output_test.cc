// Worker output: rank prefixes, whole lines, filters, per-worker log files.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

namespace {

// The body of a line of test_worker's chatty mode, "R:i:<letters>", checked whole.
bool IsWholeChattyBody(int rank, const std::string& body) {
  const size_t first = body.find(':');
  const size_t second = body.find(':', first + 1);
  if (first == std::string::npos || second == std::string::npos) return false;
  if (std::stoi(body.substr(0, first)) != rank) return false;
  const int i = std::stoi(body.substr(first + 1, second - first - 1));
  const size_t expected = static_cast<size_t>((i * 7919 + rank * 104729) % 10240);
  const std::string payload = body.substr(second + 1);
  return payload == std::string(expected, static_cast<char>('a' + rank % 26));
}

// The chatty lines of `rank` in `output`, put together again: a worker that pauses mid-line
// for over 100 ms has the line's start shown at once and the rest behind its prefix again when
// another worker wrote meanwhile, so a part that does not start with "R:" continues the line
// before it. Every part must be one rank's alone: no line of the console mixes two workers.
std::vector<std::string> ChattyLines(const std::string& output, int rank) {
  std::vector<std::string> lines;
  const std::string header = std::to_string(rank) + ":";
  for (const auto& part : RankLines(output, rank)) {
    if (part.rfind(header, 0) == 0 || lines.empty()) {
      lines.push_back(part);
    } else {
      lines.back() += part;
    }
  }
  return lines;
}

}  // namespace

TEST_CASE(
    "heavy output from many workers never mixes two workers in a line, each behind its rank's "
    "prefix") {
  const int workers = 8, lines = 400;
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=" + std::to_string(workers),
                            kTestWorker, "chatty", std::to_string(lines)}),
                    {}, std::chrono::seconds(120));
  REQUIRE(result.code() == 0);
  size_t whole = 0;
  for (const std::string* stream : {&result.out, &result.err}) {
    size_t prefixed = 0;
    for (int rank = 0; rank < workers; ++rank) {
      prefixed += RankLines(*stream, rank).size();
      for (const auto& line : ChattyLines(*stream, rank)) {
        INFO("rank " << rank << ": " << line.substr(0, 80));
        REQUIRE(IsWholeChattyBody(rank, line));
        ++whole;
      }
    }
    size_t shown = 0;  // every line on the console is some rank's, behind its prefix
    for (const auto& line : Lines(*stream)) shown += line.rfind("[rank", 0) == 0 ? 1 : 0;
    CHECK(shown == prefixed);
  }
  CHECK(whole == static_cast<size_t>(workers * lines));
  // stdout carries the even lines, stderr the odd ones.
  CHECK(ChattyLines(result.out, 5).size() == lines / 2);
  CHECK(ChattyLines(result.err, 5).size() == lines / 2);
}

TEST_CASE("a last line without a newline is still forwarded") {
  auto result = Run(Ddprun({"--standalone", "--nproc_per_node=2", kTestWorker, "partial"}));
  REQUIRE(result.code() == 0);
  CHECK(RankLines(result.out, 0) == std::vector<std::string>{"no newline at the end"});
  CHECK(RankLines(result.out, 1) == std::vector<std::string>{"no newline at the end"});
}

TEST_CASE("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE shapes each line's prefix as under torchrun") {
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=2", "--role=trainer", kTestWorker, "partial"}),
          {{"TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE", "<${role_name}:$rank/${local_rank} $x>"}});
  INFO(result.out << result.err);
  REQUIRE(result.code() == 0);
  CHECK(Count(result.out, "<trainer:0/0 $x>no newline at the end") == 1);
  CHECK(Count(result.out, "<trainer:1/1 $x>no newline at the end") == 1);
  CHECK(Count(result.out, "[rank") == 0);
}

TEST_CASE("the flag --local_ranks_filter shows the console output of the chosen local ranks only") {
  auto result = Run(Ddprun(
      {"--standalone", "--nproc_per_node=4", "--local_ranks_filter=1,3", kTestWorker, "env"}));
  REQUIRE(result.code() == 0);
  CHECK(RankLines(result.out, 0).empty());
  CHECK_FALSE(RankLines(result.out, 1).empty());
  CHECK(RankLines(result.out, 2).empty());
  CHECK_FALSE(RankLines(result.out, 3).empty());
}

TEST_CASE("the flag --redirects writes worker output to per-worker files instead of the console") {
  ScratchDir logs;
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=2", "--redirects=3", "--log_dir=" + logs.path(),
                  "--run_id=files", kTestWorker, "args", "hello"}));
  REQUIRE(result.code() == 0);
  CHECK(RankLines(result.out, 0).empty());
  for (int rank = 0; rank < 2; ++rank) {
    const std::string dir = logs.path() + "/files/attempt_0/" + std::to_string(rank);
    CHECK(ReadFile(dir + "/stdout.log") == "arg[0]=hello\n");
    CHECK(std::filesystem::exists(dir + "/stderr.log"));
  }
}

TEST_CASE(
    "the flag --tee writes the files and still shows the output: a per-rank map selects ranks") {
  ScratchDir logs;
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=2", "--tee=0:1", "--log_dir=" + logs.path(),
                  "--run_id=teed", kTestWorker, "args", "hi"}));
  REQUIRE(result.code() == 0);
  CHECK(RankLines(result.out, 0) == std::vector<std::string>{"arg[0]=hi"});
  CHECK(RankLines(result.out, 1) == std::vector<std::string>{"arg[0]=hi"});
  CHECK(ReadFile(logs.path() + "/teed/attempt_0/0/stdout.log") == "arg[0]=hi\n");
  CHECK_FALSE(std::filesystem::exists(logs.path() + "/teed/attempt_0/1/stdout.log"));
}

TEST_CASE(
    "a rerun with the same run id and --log_dir keeps the earlier run's logs and says where "
    "its own go") {
  ScratchDir logs;
  auto run = [&](const std::string& word) {
    return Run(Ddprun({"--standalone", "--nproc_per_node=1", "--redirects=3",
                       "--log_dir=" + logs.path(), "--run_id=again", kTestWorker, "args", word}));
  };
  const auto first = run("first");
  const auto second = run("second");
  const auto third = run("third");
  REQUIRE(first.code() == 0);
  REQUIRE(second.code() == 0);
  REQUIRE(third.code() == 0);
  CHECK(ReadFile(logs.path() + "/again/attempt_0/0/stdout.log") == "arg[0]=first\n");
  CHECK(ReadFile(logs.path() + "/again.1/attempt_0/0/stdout.log") == "arg[0]=second\n");
  CHECK(ReadFile(logs.path() + "/again.2/attempt_0/0/stdout.log") == "arg[0]=third\n");
  CHECK(Count(first.err, "holds an earlier run's logs") == 0);
  CHECK(Count(second.err, "this run's go to " + logs.path() + "/again.1") == 1);
}

TEST_CASE(
    "through a pipe, ranks redrawing their lines beside another's output leave no empty line, and "
    "each rank's last state shows") {
  RedrawFolder folder;
  auto result = Run(Ddprun(
      {"--standalone", "--nproc_per_node=4", "/bin/sh", "-c", kRedrawingRanks, folder.path()}));
  REQUIRE(result.code() == 0);
  CheckRedrawingRanks(result.out);
}

TEST_CASE(
    "a stream that goes only to its log file is a pipe, and holds no redraw's terminal bytes") {
  // Which of the streams the worker sees as terminals, written to both.
  const std::string script =
      "test -t 1 && o=tty || o=pipe; test -t 2 && e=tty || e=pipe; echo \"out $o $e\"; "
      "echo \"err $o $e\" >&2";
  ScratchDir logs;
  auto result =
      Run(Ddprun({"--standalone", "--nproc_per_node=1", "--tty=always", "--redirects=3",
                  "--log_dir=" + logs.path(), "--run_id=files", "/bin/sh", "-c", script}));
  REQUIRE(result.code() == 0);
  CHECK(ReadFile(logs.path() + "/files/attempt_0/0/stdout.log") == "out pipe pipe\n");
  CHECK(ReadFile(logs.path() + "/files/attempt_0/0/stderr.log") == "err pipe pipe\n");
}
