// RoundMembers: the node ids of a job's running round, by group rank, with the membership test
// in O(1). JobRounds asks "is this node a member?" on every heartbeat, join and report, and
// `ddprun status` asks it for every node: a search of the rank list made each of those O(nodes),
// and a round at thousands of nodes O(nodes^2).
//
// An empty id is an empty slot: a member of a round adopted after a server restart that has not
// come back yet. An id is normally in one slot; should a node fill two, it counts as a member
// until both are gone. A plain value type; not thread-safe: the owner serializes calls.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace ddprun {

class RoundMembers {
 public:
  // By group rank ("": an empty slot).
  const std::vector<std::string>& by_rank() const { return by_rank_; }
  size_t size() const { return by_rank_.size(); }
  bool empty() const { return by_rank_.empty(); }
  bool Contains(const std::string& node_id) const { return slots_of_.contains(node_id); }
  bool HasEmptySlots() const { return empty_slots_ > 0; }
  // Distinct members (a node in two slots counts once; empty slots not at all).
  size_t node_count() const { return slots_of_.size(); }

  void Clear();
  // The next group rank.
  void Append(const std::string& node_id);
  // `count` empty slots, replacing every member.
  void AssignEmpty(size_t count);
  // Puts the node in slot `rank` (< size()), replacing whoever held it.
  void Fill(size_t rank, const std::string& node_id);
  // Removes the node's first slot; the ranks after it move down by one. O(size()). False when
  // the node is not a member.
  bool Remove(const std::string& node_id);
  // Removes every empty slot; the ranks close up. O(size()).
  void DropEmptySlots();

 private:
  void Count(const std::string& node_id, int delta);

  std::vector<std::string> by_rank_;
  std::unordered_map<std::string, int> slots_of_;  // slots each member fills, > 0
  size_t empty_slots_ = 0;
};

}  // namespace ddprun
