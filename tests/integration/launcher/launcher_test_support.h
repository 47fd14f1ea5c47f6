// Helpers shared by the launcher's integration tests: the paths of the binaries under test and
// parsing of ddprun's prefixed output.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/child_process.h"
#include "support/test_paths.h"

namespace ddprun::testing {

inline const std::string kDdprun = paths::kDdprun;
inline const std::string kTestWorker = paths::kTestWorker;
inline const std::string kHelloStore = paths::kHelloStore;

// {ddprun, args...}
inline std::vector<std::string> Ddprun(std::vector<std::string> args) {
  args.insert(args.begin(), kDdprun);
  return args;
}

// The lines ddprun printed for global rank `rank`, without the "[rankN]: " prefix.
inline std::vector<std::string> RankLines(const std::string& output, int rank) {
  const std::string prefix = "[rank" + std::to_string(rank) + "]: ";
  std::vector<std::string> lines;
  for (const auto& line : Lines(output)) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line.substr(prefix.size()));
  }
  return lines;
}

// "KEY=VALUE" lines of one rank as a map.
inline std::map<std::string, std::string> RankVariables(const std::string& output, int rank) {
  std::map<std::string, std::string> variables;
  for (const auto& line : RankLines(output, rank)) {
    auto eq = line.find('=');
    if (eq != std::string::npos) variables[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return variables;
}

// The pids that follow `marker` ("]: helper ") on the lines of ddprun's `output`: what the
// workers said of processes they started or found.
inline std::vector<pid_t> PidsAfter(const std::string& output, const std::string& marker) {
  std::vector<pid_t> pids;
  for (const auto& line : Lines(output)) {
    const size_t at = line.find(marker);
    if (at != std::string::npos) pids.push_back(std::stoi(line.substr(at + marker.size())));
  }
  return pids;
}

// Kills `pids` when the scope ends: should a check fail, what a test started must not outlive it.
struct KillOnExit {
  std::vector<pid_t> pids;
  ~KillOnExit() {
    for (pid_t pid : pids) ::kill(pid, SIGKILL);
  }
};

// This machine's host name, as the failure report and `ddprun status` name it.
inline std::string ThisHostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof(name) - 1) == 0 ? name : "localhost";
}

inline size_t Count(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++count;
  }
  return count;
}

// The console lines of `text` that show nothing: empty, or only carriage returns (what a '\r'
// forwarded without the text after it left when another rank's line came between).
inline size_t EmptyLines(const std::string& text) {
  size_t empty = 0;
  for (const auto& line : Lines(text)) {
    if (line.find_first_not_of('\r') == std::string::npos) ++empty;
  }
  return empty;
}

// What each console line of `text` shows last: the text after its last '\r' that has any.
inline std::vector<std::string> LastDrawn(const std::string& text) {
  std::vector<std::string> shown;
  for (const auto& line : Lines(text)) {
    std::string last;
    for (size_t start = 0; start <= line.size();) {
      size_t end = line.find('\r', start);
      if (end == std::string::npos) end = line.size();
      if (end > start) last = line.substr(start, end - start);
      start = end + 1;
    }
    shown.push_back(last);
  }
  return shown;
}

// A worker for `sh -c SCRIPT DIR`, DIR holding a named pipe "go": rank 1 writes 60 ordinary lines
// while every other rank redraws its progress line with '\r' (one write per redraw, as tqdm
// draws), from before rank 1's first line (rank 0 says "go" after its first redraw) until after
// its last (rank 1 leaves "done"), then ends it with "R done".
inline const std::string kRedrawingRanks =
    "if [ \"$RANK\" = 1 ]; then read x < \"$0/go\"; i=0; while [ $i -lt 60 ]; do "
    "echo \"line $i of rank 1\"; i=$((i+1)); done; : > \"$0/done\"; else "
    "printf '\\r%s step 0' \"$RANK\"; if [ \"$RANK\" = 0 ]; then echo go > \"$0/go\"; fi; i=1; "
    "while [ ! -e \"$0/done\" ]; do printf '\\r%s step %d' \"$RANK\" $i; i=$((i+1)); done; "
    "printf '\\r%s done\\n' \"$RANK\"; fi";

// What ddprun showed of kRedrawingRanks on 4 ranks: no empty line, each redrawing rank's last
// state once, and all of rank 1's lines.
inline void CheckRedrawingRanks(const std::string& console) {
  // Its end, where each rank's last state is.
  INFO(console.substr(console.size() > 3000 ? console.size() - 3000 : 0));
  CHECK(EmptyLines(console) == 0);
  const auto shown = LastDrawn(console);
  for (int rank : {0, 2, 3}) {
    const std::string last =
        "[rank" + std::to_string(rank) + "]: " + std::to_string(rank) + " done";
    CHECK(std::count(shown.begin(), shown.end(), last) == 1);
  }
  CHECK(RankLines(console, 1).size() == 60);
}

// A scratch folder for kRedrawingRanks, with its named pipe.
struct RedrawFolder {
  ScratchDir dir;
  RedrawFolder() { REQUIRE(::mkfifo((dir / "go").c_str(), 0600) == 0); }
  const std::string& path() const { return dir.path(); }
};

// The seconds a hang report says rank `rank` went without progress when the hang was found
// ("hang: rank 1 (h, local 1) at step 5 for 2.1 s; ..."); -1 when it names no hang of that rank.
inline double StalledSeconds(const std::string& err, int rank) {
  std::smatch match;
  const std::regex hang("hang: rank " + std::to_string(rank) +
                        R"( \([^)]*\)[^;]* for ([0-9.]+) s)");
  if (!std::regex_search(err, match, hang)) return -1;
  return std::stod(match[1]);
}

}  // namespace ddprun::testing
