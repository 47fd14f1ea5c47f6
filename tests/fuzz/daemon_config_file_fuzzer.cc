// ddprund's configuration file (ReadDaemonConfigFile), whatever is in it: written to a file of
// the fuzzer's own and read back through the path, as the daemon reads it. An error is one line
// that names the file.
#include <cstdio>
#include <cstdlib>

#include "daemon_config_file.h"
#include "fuzz_support.h"

namespace {
const ddprun::fuzz::ScratchFile* config_file = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  config_file = new ddprun::fuzz::ScratchFile("ddprund.conf");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  config_file->Write(ddprun::fuzz::AsText(data, size));
  auto settings = ddprun::ReadDaemonConfigFile(config_file->path());
  if (!settings.ok()) {
    ddprun::fuzz::CheckOneLineError(settings.status());
    if (settings.status().message().find(config_file->path()) == std::string::npos) {
      std::fprintf(stderr, "fuzz: a configuration error that does not name the file: %s\n",
                   settings.status().message().c_str());
      std::abort();
    }
    return 0;
  }
  if (settings->port && (*settings->port < 0 || *settings->port > 65535)) {
    std::fprintf(stderr, "fuzz: the configuration file accepted port %d\n", *settings->port);
    std::abort();
  }
  return 0;
}
