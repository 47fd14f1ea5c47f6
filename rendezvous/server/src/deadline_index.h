// DeadlineIndex: one deadline per key (a job, a node), and the keys in the order of their
// deadlines, so that the earliest is found at once and a tick visits only the keys that are due.
// Every operation is O(log n). The rendezvous server keeps one over its jobs (JobRegistry) and
// one over each job's nodes (JobRounds): a heartbeat moves one node's deadline and must not cost
// a walk over every node of the job. A plain value type; not thread-safe: the owner serializes
// calls.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

class DeadlineIndex {
 public:
  // Gives `key` the deadline `at`, replacing the one it had.
  void Set(const std::string& key, RendezvousTime at);
  // Forgets the key's deadline; a key without one is ignored.
  void Erase(const std::string& key);
  // The key's deadline; nullopt when it has none.
  std::optional<RendezvousTime> Find(const std::string& key) const;
  // The earliest deadline of any key; nullopt when the index is empty.
  std::optional<RendezvousTime> Earliest() const;
  // The keys whose deadline is at or before `now`, earliest first (keys with the same deadline
  // by key). They stay in the index: the caller sets or erases each as it handles it.
  std::vector<std::string> Due(RendezvousTime now) const;
  size_t size() const { return deadline_of_.size(); }
  bool empty() const { return deadline_of_.empty(); }

 private:
  std::map<std::string, RendezvousTime> deadline_of_;
  std::set<std::pair<RendezvousTime, std::string>> by_deadline_;
};

}  // namespace ddprun
