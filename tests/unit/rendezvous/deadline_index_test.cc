// DeadlineIndex: a deadline per key, the earliest at once, the due ones in order.
#include "deadline_index.h"

#include <catch2/catch.hpp>

using namespace ddprun;
using namespace std::chrono_literals;

TEST_CASE("the earliest deadline is the smallest of the keys' latest deadlines") {
  DeadlineIndex index;
  const RendezvousTime t0{};
  CHECK(index.empty());
  CHECK_FALSE(index.Earliest().has_value());
  index.Set("a", t0 + 3s);
  index.Set("b", t0 + 5s);
  CHECK(index.Earliest() == t0 + 3s);
  index.Set("a", t0 + 7s);  // a heartbeat moves a's deadline: b's is now the first
  CHECK(index.Earliest() == t0 + 5s);
  CHECK(index.Find("a") == t0 + 7s);
  CHECK(index.size() == 2);
  index.Erase("b");
  CHECK(index.Earliest() == t0 + 7s);
  index.Erase("b");  // a key without a deadline is ignored
  index.Erase("a");
  CHECK(index.empty());
  CHECK_FALSE(index.Find("a").has_value());
}

TEST_CASE("the due keys are those at or before now, earliest first, and they stay indexed") {
  DeadlineIndex index;
  const RendezvousTime t0{};
  index.Set("late", t0 + 9s);
  index.Set("c", t0 + 2s);
  index.Set("b", t0 + 1s);
  index.Set("a", t0 + 2s);
  CHECK(index.Due(t0).empty());
  CHECK(index.Due(t0 + 2s) == std::vector<std::string>{"b", "a", "c"});
  CHECK(index.size() == 4);
  index.Set("b", t0 + 9s);  // the caller handles a due key by moving or erasing it
  index.Erase("a");
  CHECK(index.Due(t0 + 2s) == std::vector<std::string>{"c"});
  CHECK(index.Due(t0 + 9s) == std::vector<std::string>{"c", "b", "late"});
}
