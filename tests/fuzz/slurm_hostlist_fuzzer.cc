// Slurm's compressed host lists ("gpu[01-04,07],login1"), as SLURM_STEP_NODELIST carries them,
// expanded by ExpandHostlist. A list it expands has no empty name and none with a bracket left
// in it; one it refuses says why on one line.
#include <cstdio>
#include <cstdlib>

#include "fuzz_support.h"
#include "slurm_hostlist.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto hosts = ddprun::ExpandHostlist(ddprun::fuzz::AsText(data, size));
  if (!hosts.ok()) {
    ddprun::fuzz::CheckOneLineError(hosts.status());
    return 0;
  }
  for (const std::string& host : *hosts) {
    if (host.empty() || host.find_first_of("[], \t\r\n") != std::string::npos) {
      std::fprintf(stderr, "fuzz: the host list expanded to the name '%s'\n", host.c_str());
      std::abort();
    }
  }
  return 0;
}
