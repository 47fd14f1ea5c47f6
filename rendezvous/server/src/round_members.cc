// RoundMembers; see round_members.h.
#include "round_members.h"

#include <algorithm>

namespace ddprun {

void RoundMembers::Count(const std::string& node_id, int delta) {
  if (node_id.empty()) {
    empty_slots_ = static_cast<size_t>(static_cast<long>(empty_slots_) + delta);
    return;
  }
  auto it = slots_of_.try_emplace(node_id, 0).first;
  it->second += delta;
  if (it->second <= 0) slots_of_.erase(it);
}

void RoundMembers::Clear() {
  by_rank_.clear();
  slots_of_.clear();
  empty_slots_ = 0;
}

void RoundMembers::Append(const std::string& node_id) {
  by_rank_.push_back(node_id);
  Count(node_id, 1);
}

void RoundMembers::AssignEmpty(size_t count) {
  Clear();
  by_rank_.assign(count, std::string());
  empty_slots_ = count;
}

void RoundMembers::Fill(size_t rank, const std::string& node_id) {
  std::string& slot = by_rank_.at(rank);
  if (slot == node_id) return;
  Count(slot, -1);
  slot = node_id;
  Count(slot, 1);
}

bool RoundMembers::Remove(const std::string& node_id) {
  if (!Contains(node_id)) return false;  // spares the scan for nodes that only wait
  auto it = std::find(by_rank_.begin(), by_rank_.end(), node_id);
  if (it == by_rank_.end()) return false;
  Count(node_id, -1);
  by_rank_.erase(it);
  return true;
}

void RoundMembers::DropEmptySlots() {
  if (empty_slots_ == 0) return;
  std::erase(by_rank_, std::string());
  empty_slots_ = 0;
}

}  // namespace ddprun
