// DeadlineIndex; see deadline_index.h.
#include "deadline_index.h"

namespace ddprun {

void DeadlineIndex::Set(const std::string& key, RendezvousTime at) {
  auto [it, inserted] = deadline_of_.try_emplace(key, at);
  if (!inserted) {
    if (it->second == at) return;
    by_deadline_.erase({it->second, key});
    it->second = at;
  }
  by_deadline_.emplace(at, key);
}

void DeadlineIndex::Erase(const std::string& key) {
  auto it = deadline_of_.find(key);
  if (it == deadline_of_.end()) return;
  by_deadline_.erase({it->second, key});
  deadline_of_.erase(it);
}

std::optional<RendezvousTime> DeadlineIndex::Find(const std::string& key) const {
  auto it = deadline_of_.find(key);
  if (it == deadline_of_.end()) return std::nullopt;
  return it->second;
}

std::optional<RendezvousTime> DeadlineIndex::Earliest() const {
  if (by_deadline_.empty()) return std::nullopt;
  return by_deadline_.begin()->first;
}

std::vector<std::string> DeadlineIndex::Due(RendezvousTime now) const {
  std::vector<std::string> due;
  for (auto it = by_deadline_.begin(); it != by_deadline_.end() && it->first <= now; ++it) {
    due.push_back(it->second);
  }
  return due;
}

}  // namespace ddprun
