// ReadPidList: the process ids of a kernel list (cgroup.procs, /proc/PID/task/TID/children), as
// the leftover sweep and the job's cgroup read them.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "ddprun/base/files.h"
#include "support/child_process.h"

using namespace ddprun;
using ddprun::testing::ScratchDir;

TEST_CASE("a pid list is read whether its ids are separated by spaces or by lines", "[files]") {
  ScratchDir dir;
  std::ofstream(dir / "spaces") << "12 34 56 ";    // as /proc/PID/task/TID/children
  std::ofstream(dir / "lines") << "12\n34\n56\n";  // as cgroup.procs
  const std::vector<pid_t> expected{12, 34, 56};
  CHECK(ReadPidList(dir / "spaces") == expected);
  CHECK(ReadPidList(dir / "lines") == expected);
}

TEST_CASE("a pid list that is empty, missing or garbled yields only the ids it holds", "[files]") {
  ScratchDir dir;
  std::ofstream(dir / "empty");
  std::ofstream(dir / "garbled") << "x 7 -3 0 99999999999 8\n";
  CHECK(ReadPidList(dir / "empty").empty());
  CHECK(ReadPidList(dir / "missing").empty());
  CHECK(ReadPidList(dir / "garbled") == std::vector<pid_t>{7, 8});
}

TEST_CASE("this process's children in /proc are read as a pid list", "[files]") {
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const auto children = ReadPidList("/proc/self/task/" + std::to_string(::gettid()) + "/children");
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  CHECK(std::count(children.begin(), children.end(), child) == 1);
}
