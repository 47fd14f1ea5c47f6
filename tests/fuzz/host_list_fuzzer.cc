// The hosts of a many-host launch: --hosts' "a,b:port" text (ParseHostList) and a --hostfile's
// lines (ReadHostFile, through a file of the fuzzer's own). The first byte chooses which. Every
// host accepted is a non-empty name, without white space or a comma.
#include <cstdio>
#include <cstdlib>

#include "fuzz_support.h"
#include "host_list.h"

namespace {
const ddprun::fuzz::ScratchFile* host_file = nullptr;

void CheckHosts(const ddprun::Result<std::vector<std::string>>& hosts) {
  if (!hosts.ok()) {
    ddprun::fuzz::CheckOneLineError(hosts.status());
    return;
  }
  if (hosts->empty()) {
    std::fprintf(stderr, "fuzz: a host list accepted with no host in it\n");
    std::abort();
  }
  for (const std::string& host : hosts.value()) {
    if (host.empty() || host.find_first_of(" \t\r\n,") != std::string::npos) {
      std::fprintf(stderr, "fuzz: a host list accepted the host '%s'\n", host.c_str());
      std::abort();
    }
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ddprun::fuzz::PrepareProcess();
  host_file = new ddprun::fuzz::ScratchFile("hostfile");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text = ddprun::fuzz::AsText(data + 1, size - 1);
  if ((data[0] & 1) == 0) {
    CheckHosts(ddprun::ParseHostList(std::string(text)));
  } else {
    host_file->Write(text);
    CheckHosts(ddprun::ReadHostFile(host_file->path()));
  }
  return 0;
}
