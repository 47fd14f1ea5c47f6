// ParseEtcdEndpoints; see etcd_endpoints.h.
#include "ddprun/etcd/etcd_endpoints.h"

#include "ddprun/base/parsing.h"

namespace ddprun::etcd {

Result<std::vector<std::string>> ParseEtcdEndpoints(const std::string& list) {
  std::vector<std::string> endpoints;
  for (const std::string& entry : SplitCommas(list)) {
    const std::string endpoint = Trim(entry);
    const size_t colon = endpoint.rfind(':');
    if (endpoint.empty() || colon == std::string::npos || colon == 0 ||
        !ParseInteger<int>(endpoint.substr(colon + 1), 1, 65535)) {
      return InvalidArgumentError("etcd endpoint '" + endpoint +
                                  "' is not HOST:PORT (list them as h1:2379,h2:2379,h3:2379)");
    }
    endpoints.push_back(endpoint);
  }
  if (endpoints.empty()) return InvalidArgumentError("no etcd endpoint given");
  return endpoints;
}

}  // namespace ddprun::etcd
