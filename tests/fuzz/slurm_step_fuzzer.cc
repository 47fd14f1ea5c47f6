// What ddprun reads from a Slurm step's environment (ReadSlurmStep). The input is the
// environment: NUL-separated KEY=VALUE entries (a libFuzzer dictionary holds the SLURM_* names).
// A step it refuses says why on one line; the flags it derives are ones the command line takes.
#include <cstdio>
#include <cstdlib>

#include "fuzz_support.h"
#include "slurm_step.h"

namespace {
void Fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: %s\n", what.c_str());
  std::abort();
}

bool IsCount(const std::string& text) {
  return !text.empty() && text.size() < 10 &&
         text.find_first_not_of("0123456789") == std::string::npos;
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ddprun::EnvironmentMap environment;
  for (const std::string& entry : ddprun::fuzz::SplitAtNul(ddprun::fuzz::AsText(data, size))) {
    const size_t equals = entry.find('=');
    if (equals != std::string::npos)
      environment[entry.substr(0, equals)] = entry.substr(equals + 1);
  }
  auto step = ddprun::ReadSlurmStep(environment, [] { return 2; });
  if (!step.ok()) {
    ddprun::fuzz::CheckOneLineError(step.status());
    return 0;
  }
  if (!step->has_value()) return 0;
  for (const ddprun::DerivedFlag& flag : (*step)->flags) {
    if ((flag.flag == "--nnodes" || flag.flag == "--node_rank" ||
         flag.flag == "--nproc_per_node") &&
        !IsCount(flag.value) && flag.value != "gpu") {
      Fail("the step derived " + flag.flag + "=" + flag.value);
    }
    if (flag.value.find_first_of(" \t\r\n") != std::string::npos) {
      Fail("the step derived a value with white space: " + flag.flag + "=" + flag.value);
    }
  }
  ddprun::fuzz::CheckOneLineMessage((*step)->Banner());
  return 0;
}
