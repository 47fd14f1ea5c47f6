// The names of ranks' shared memory, and their removal by the pid of the process that made them.
#include "ddprun/base/rank_shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

namespace {

bool Exists(const std::string& name) { return std::filesystem::exists("/dev/shm" + name); }

void Create(const std::string& name) {
  const int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  REQUIRE(fd >= 0);
  ::close(fd);
}

}  // namespace

TEST_CASE("a rank's shared-memory names carry its pid and are removed by it, and only by it") {
  const std::string pid = std::to_string(::getpid());
  const std::string a = ddprun::NewRankSharedMemoryName("ring-0");
  const std::string b = ddprun::NewRankSharedMemoryName("registered");
  CHECK(a.rfind("/ddprun-" + pid + "-ring-0-", 0) == 0);
  CHECK(b.rfind("/ddprun-" + pid + "-registered-", 0) == 0);
  CHECK(a != ddprun::NewRankSharedMemoryName("ring-0"));
  // Another process's name whose pid starts with this one's digits, and a name not a rank's.
  const std::string longer_pid = "/ddprun-" + pid + "0-ring-0-test";
  const std::string other = "/ddprun-test-" + pid;
  for (const auto& name : {a, b, longer_pid, other}) Create(name);

  CHECK(ddprun::RemoveRankSharedMemory(::getpid()) == 2);
  CHECK_FALSE(Exists(a));
  CHECK_FALSE(Exists(b));
  CHECK(Exists(longer_pid));
  CHECK(Exists(other));
  CHECK(ddprun::RemoveRankSharedMemory(::getpid()) == 0);
  ::shm_unlink(longer_pid.c_str());
  ::shm_unlink(other.c_str());
}
