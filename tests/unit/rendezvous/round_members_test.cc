// RoundMembers: a round's members by group rank, with membership in O(1).
#include "round_members.h"

#include <catch2/catch.hpp>

using namespace ddprun;

TEST_CASE("members keep the order they were given, and removing one closes up the ranks") {
  RoundMembers members;
  for (const char* id : {"a", "b", "c"}) members.Append(id);
  CHECK(members.by_rank() == std::vector<std::string>{"a", "b", "c"});
  CHECK(members.Contains("b"));
  CHECK_FALSE(members.Contains("d"));
  CHECK(members.Remove("b"));
  CHECK_FALSE(members.Remove("b"));
  CHECK_FALSE(members.Contains("b"));
  CHECK(members.by_rank() == std::vector<std::string>{"a", "c"});
  members.Clear();
  CHECK(members.empty());
  CHECK_FALSE(members.Contains("a"));
}

TEST_CASE("an adopted round's empty slots fill as its members come back") {
  RoundMembers members;
  members.AssignEmpty(3);
  CHECK(members.size() == 3);
  CHECK(members.HasEmptySlots());
  CHECK_FALSE(members.Contains(""));  // an empty slot is nobody
  members.Fill(2, "c");
  members.Fill(0, "a");
  CHECK(members.Contains("c"));
  CHECK(members.HasEmptySlots());
  members.Fill(1, "b");
  CHECK_FALSE(members.HasEmptySlots());
  members.Fill(1, "x");  // whoever held the slot is replaced
  CHECK_FALSE(members.Contains("b"));
  CHECK(members.by_rank() == std::vector<std::string>{"a", "x", "c"});
}

TEST_CASE("dropping the empty slots of an adopted round keeps the members in rank order") {
  RoundMembers members;
  members.AssignEmpty(4);
  members.Fill(1, "b");
  members.Fill(3, "d");
  members.DropEmptySlots();
  CHECK_FALSE(members.HasEmptySlots());
  CHECK(members.by_rank() == std::vector<std::string>{"b", "d"});
  CHECK(members.Contains("d"));
}

TEST_CASE("a node in two slots is a member until it is out of both") {
  RoundMembers members;
  members.AssignEmpty(2);
  members.Fill(0, "a");
  members.Fill(1, "a");
  CHECK(members.Remove("a"));
  CHECK(members.Contains("a"));
  CHECK(members.Remove("a"));
  CHECK_FALSE(members.Contains("a"));
}
