// Helpers shared by the launcher's integration tests: the paths of the binaries under test and
// parsing of ddprun's prefixed output.
#pragma once

#include <unistd.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "support/child_process.h"

namespace ddprun::testing {

inline const std::string kDdprun = DDPRUN_BINARY;
inline const std::string kTestWorker = TEST_WORKER_BINARY;
inline const std::string kHelloStore = HELLO_STORE_BINARY;

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
