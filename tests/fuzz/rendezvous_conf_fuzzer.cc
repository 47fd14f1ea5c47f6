// --rdzv_conf's "k1=v1,k2=v2" text (ParseRendezvousConf), as the user types it. An error is one
// line; settings it accepts are ones a job can run with.
#include <cstdio>
#include <cstdlib>

#include "ddprun/rendezvous/rendezvous_conf.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto settings = ddprun::ParseRendezvousConf(std::string(ddprun::fuzz::AsText(data, size)));
  if (!settings.ok()) {
    ddprun::fuzz::CheckOneLineError(settings.status());
    return 0;
  }
  if (settings->join_timeout.count() < 0 || settings->last_call_timeout.count() < 0 ||
      settings->heartbeat_timeout.count() <= 0) {
    std::fprintf(stderr, "fuzz: --rdzv_conf accepted a negative or zero timeout\n");
    std::abort();
  }
  return 0;
}
