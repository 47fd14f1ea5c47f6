// ParseHostList and ReadHostFile; see host_list.h.
#include "host_list.h"

#include <set>
#include <sstream>

#include "ddprun/base/files.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"
#include "rendezvous_options.h"

namespace ddprun {
namespace {

// A file of a million hosts is under 32 MiB; what is larger is not a host file.
constexpr size_t kMaxHostFileBytes = size_t{32} << 20;

// Adds `entry` (where: how to name it in an error) to `hosts` as "host:port".
Status AddHost(const std::string& entry, const std::string& where,
               std::vector<std::string>& hosts) {
  auto endpoint = ParseEndpoint(entry, kDefaultRendezvousPort);
  if (!endpoint.ok()) {
    return InvalidArgumentError(where + ": '" + entry + "' is not HOST or HOST:PORT");
  }
  std::string host = endpoint->host + ":" + std::to_string(endpoint->port);
  for (const std::string& known : hosts) {
    if (known == host) return InvalidArgumentError(where + ": host " + host + " is given twice");
  }
  hosts.push_back(std::move(host));
  return Status::Ok();
}

}  // namespace

Result<std::vector<std::string>> ParseHostList(const std::string& comma_separated) {
  std::vector<std::string> hosts;
  for (const std::string& item : SplitCommas(comma_separated)) {
    const std::string entry = Trim(item);
    if (entry.empty()) {
      return InvalidArgumentError("--hosts must list HOST[:PORT] separated by commas, not '" +
                                  comma_separated + "'");
    }
    RETURN_IF_ERROR(AddHost(entry, "--hosts", hosts));
  }
  return hosts;
}

Result<std::vector<std::string>> ReadHostFile(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string text, ReadUserFile("--hostfile", path, kMaxHostFileBytes));
  std::istringstream in(text);
  std::vector<std::string> hosts;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string entry = Trim(line.substr(0, line.find('#')));
    if (entry.empty()) continue;
    RETURN_IF_ERROR(AddHost(entry, "--hostfile " + path + ":" + std::to_string(number), hosts));
  }
  if (hosts.empty()) return InvalidArgumentError("--hostfile " + path + " lists no host");
  return hosts;
}

}  // namespace ddprun
