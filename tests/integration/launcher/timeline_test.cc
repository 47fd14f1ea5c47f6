// DDPRUN_TIMELINE=1: ddprun says where its time went, phase by phase, in the order they ended.
#include <algorithm>
#include <catch2/catch.hpp>
#include <string>

#include "integration/launcher/launcher_test_support.h"

using namespace ddprun::testing;

TEST_CASE("DDPRUN_TIMELINE=1 prints the run's phases in order and nothing is printed without it") {
  const auto run = Run(Ddprun({"--nproc_per_node=2", "/bin/true"}), {{"DDPRUN_TIMELINE", "1"}});
  REQUIRE(run.code() == 0);
  std::vector<std::string> phases;
  std::vector<double> times;
  for (const std::string& line : Lines(run.err)) {
    const std::string prefix = "ddprun: timeline: +";
    if (line.rfind(prefix, 0) != 0) continue;
    const size_t unit = line.find(" ms ");
    REQUIRE(unit != std::string::npos);
    times.push_back(std::stod(line.substr(prefix.size(), unit - prefix.size())));
    phases.push_back(line.substr(unit + 4));
  }
  CHECK(Count(run.err, "ms of CPU before main") == 1);
  REQUIRE(phases.size() >= 6);
  CHECK(phases.front() == "the command line is parsed");
  CHECK(std::find(phases.begin(), phases.end(), "workers started: 2") != phases.end());
  CHECK(Count(run.err, "worker reaped, pid ") == 2);
  CHECK(phases.back() == "everything the run made is removed");
  CHECK(std::is_sorted(times.begin(), times.end()));

  const auto quiet = Run(Ddprun({"--nproc_per_node=2", "/bin/true"}));
  CHECK(quiet.code() == 0);
  CHECK(Count(quiet.err, "timeline") == 0);
}
