// Where a daemon group's state lives in etcd (docs/control_plane.md, "The layout in etcd").
#pragma once

#include <string>

namespace ddprun::etcd {

// "<prefix>jobs/<job>/": what every key of one job starts with. The job id is escaped ('%' and
// '/' as %25 and %2F), so no job's keys fall under another's.
std::string JobKeysPrefix(const std::string& prefix, const std::string& job_id);

}  // namespace ddprun::etcd
