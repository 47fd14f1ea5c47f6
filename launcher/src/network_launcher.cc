// NetworkLauncherPath and ExecNetworkLauncher; see network_launcher.h.
#include "network_launcher.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ddprun {

std::string NetworkLauncherPath() {
  char path[4096];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof(path) - 1);
  const std::string self = n > 0 ? std::string(path, static_cast<size_t>(n)) : "/usr/bin/ddprun";
  return self.substr(0, self.rfind('/') + 1) + "../libexec/ddprun/ddprun";
}

int ExecNetworkLauncher(char** argv) {
  const std::string path = NetworkLauncherPath();
  ::execv(path.c_str(), argv);
  const int error = errno;
  std::fprintf(stderr,
               "ddprun: error: cannot run %s, which runs multi-node jobs, --hosts, --metrics_port "
               "and the job commands: %s; reinstall ddprun\n",
               path.c_str(), std::strerror(error));
  return 1;
}

}  // namespace ddprun
