// ExpandHostlist against a table of Slurm hostlists, and, where Debian's Slurm client is
// installed, against `scontrol show hostnames` for the same table: the real Slurm is the oracle.
#include "slurm_hostlist.h"

#include <catch2/catch.hpp>
#include <fstream>

#include "support/child_process.h"
#include "support/skip.h"

using namespace ddprun;
using namespace ddprun::testing;

namespace {

using Names = std::vector<std::string>;

const std::vector<std::pair<std::string, Names>> kValid = {
    {"n1", {"n1"}},
    {"n[1-3]", {"n1", "n2", "n3"}},
    {"node[01-10]",
     {"node01", "node02", "node03", "node04", "node05", "node06", "node07", "node08", "node09",
      "node10"}},
    {"a,b[1-2],c", {"a", "b1", "b2", "c"}},
    {"rack[1-2]-node[01-02]", {"rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"}},
    {"x[8-11]", {"x8", "x9", "x10", "x11"}},
    {"n[1,3-4,07]", {"n1", "n3", "n4", "n07"}},
    {"n[001-003]", {"n001", "n002", "n003"}},
    {"h[09-11]", {"h09", "h10", "h11"}},
    {"n[1-010]", {"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"}},
    {"n[01-2]", {"n01", "n02"}},
    {"n[098-101]", {"n098", "n099", "n100", "n101"}},
    {"n[1-2],m[3-4]", {"n1", "n2", "m3", "m4"}},
    {"n[1-2]x[3]", {"n1x3", "n2x3"}},
    {"n[1-1]", {"n1"}},
    {"n[1-2]-[3-4]", {"n1-3", "n1-4", "n2-3", "n2-4"}},
    {"[1-2]", {"1", "2"}},
    {"a b", {"a", "b"}},
    {"gpu-a100-[0-1]", {"gpu-a100-0", "gpu-a100-1"}},
};

const std::vector<std::string> kInvalid = {
    "",      "n[3-1]", "n[a-b]",           "n[]",
    "n[1-2", "n]1[",   "a[1-2]b",          "n[1-]",
    "n[-2]", "n[[1]]", "n[1-99999999999]", "gpu-[0-1].cluster"};

}  // namespace

TEST_CASE("Slurm hostlists expand to their names in Slurm's order") {
  for (const auto& [hostlist, names] : kValid) {
    INFO(hostlist);
    auto expanded = ExpandHostlist(hostlist);
    REQUIRE(expanded.ok());
    CHECK(*expanded == names);
  }
}

TEST_CASE("malformed Slurm hostlists are refused with the reason") {
  for (const std::string& hostlist : kInvalid) {
    INFO(hostlist);
    auto expanded = ExpandHostlist(hostlist);
    REQUIRE_FALSE(expanded.ok());
    CHECK(expanded.status().code() == StatusCode::kInvalidArgument);
    CHECK(expanded.status().message().find("invalid Slurm hostlist") == 0);
  }
  CHECK(ExpandHostlist("a[1-2]b").status().message().find("text after the last bracket group") !=
        std::string::npos);
}

TEST_CASE("a hostlist whose names would fill more than 32 MiB is refused before any is made") {
  // 100,000 names, each 4,000 characters of text and its number: 400 MB.
  const std::string hostlist = std::string(4000, 'n') + "[1-100000]";
  auto expanded = ExpandHostlist(hostlist);
  REQUIRE_FALSE(expanded.ok());
  CHECK(expanded.status().code() == StatusCode::kInvalidArgument);
  CHECK(expanded.status().message().find("names of more than 32 MiB in all") != std::string::npos);
  // Long names are fine while they fit: 1,000 of 4,000 characters.
  auto fitting = ExpandHostlist(std::string(4000, 'n') + "[1-1000]");
  REQUIRE(fitting.ok());
  CHECK(fitting->size() == 1000);
}

TEST_CASE("the expander agrees with scontrol show hostnames on every hostlist of the table") {
  const std::string scontrol = FindOnPath("scontrol");
  if (scontrol.empty()) return SkipTest("Debian's Slurm client (scontrol) is not installed here");
  // scontrol reads a configuration before anything else; expanding a hostlist needs no more.
  ScratchDir dir;
  std::ofstream(dir / "slurm.conf") << "ClusterName=oracle\nSlurmctldHost=localhost\n"
                                       "NodeName=localhost CPUs=1 State=UNKNOWN\n"
                                       "PartitionName=p Nodes=localhost Default=YES\n";
  const std::map<std::string, std::string> env = {{"SLURM_CONF", dir / "slurm.conf"}};
  for (const auto& [hostlist, names] : kValid) {
    INFO(hostlist);
    auto oracle = Run({scontrol, "show", "hostnames", hostlist}, env);
    REQUIRE(oracle.code() == 0);
    CHECK(Lines(oracle.out) == names);
  }
  // What scontrol refuses, the expander refuses too.
  for (const char* hostlist :
       {"n[3-1]", "n[a-b]", "n[]", "a[1-2]b", "n[-2]", "n[[1]]", "gpu-[0-1].cluster"}) {
    INFO(hostlist);
    auto oracle = Run({scontrol, "show", "hostnames", hostlist}, env);
    CHECK((oracle.out + oracle.err).find("Invalid hostlist") != std::string::npos);
    CHECK_FALSE(ExpandHostlist(hostlist).ok());
  }
}
