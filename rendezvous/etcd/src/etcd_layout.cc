// JobKeysPrefix; see etcd_layout.h.
#include "ddprun/etcd/etcd_layout.h"

namespace ddprun::etcd {

std::string JobKeysPrefix(const std::string& prefix, const std::string& job_id) {
  std::string keys = prefix + "jobs/";
  for (char c : job_id) {
    if (c == '%') {
      keys += "%25";
    } else if (c == '/') {
      keys += "%2F";
    } else {
      keys += c;
    }
  }
  return keys + "/";
}

}  // namespace ddprun::etcd
