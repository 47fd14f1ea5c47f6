// KeyValueStore, the plain class behind the rendezvous service.
#include "ddprun/rendezvous/key_value_store.h"

#include <catch2/catch.hpp>

using namespace ddprun;

namespace {
const StoreScopeKey kRound0{"job", 0};
const StoreScopeKey kRound1{"job", 1};
}  // namespace

TEST_CASE("set then get returns the value: an absent key is NOT_FOUND") {
  KeyValueStore store;
  REQUIRE(store.Set(kRound0, "k", "v").ok());
  CHECK(store.Get(kRound0, "k").value() == "v");
  CHECK(store.Get(kRound0, "other").status().code() == StatusCode::kNotFound);
}

TEST_CASE("keys are scoped by job and round") {
  KeyValueStore store;
  REQUIRE(store.Set(kRound0, "nccl_id", "old").ok());
  CHECK(store.Get(kRound1, "nccl_id").status().code() == StatusCode::kNotFound);
  CHECK(store.Get({"other-job", 0}, "nccl_id").status().code() == StatusCode::kNotFound);
}

TEST_CASE("add counts in decimal text and refuses non-integers") {
  KeyValueStore store;
  CHECK(store.Add(kRound0, "n", 2).value() == 2);
  CHECK(store.Add(kRound0, "n", -5).value() == -3);
  CHECK(store.Get(kRound0, "n").value() == "-3");
  REQUIRE(store.Set(kRound0, "text", "abc").ok());
  CHECK(store.Add(kRound0, "text", 1).status().code() == StatusCode::kInvalidArgument);
  REQUIRE(store.Set(kRound0, "big", std::to_string(INT64_MAX)).ok());
  CHECK(store.Add(kRound0, "big", 1).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("compare_set follows PyTorch's semantics") {
  KeyValueStore store;
  auto created = store.CompareSet(kRound0, "k", "", "first");
  CHECK(created->swapped);
  CHECK(created->value == "first");
  auto refused = store.CompareSet(kRound0, "k", "wrong", "second");
  CHECK_FALSE(refused->swapped);
  CHECK(refused->value == "first");
  auto swapped = store.CompareSet(kRound0, "k", "first", "second");
  CHECK(swapped->swapped);
  CHECK(store.Get(kRound0, "k").value() == "second");
  auto absent = store.CompareSet(kRound0, "absent", "x", "y");
  CHECK_FALSE(absent->swapped);
  CHECK(store.Get(kRound0, "absent").status().code() == StatusCode::kNotFound);
}

TEST_CASE("delete removes a key and says whether it existed") {
  KeyValueStore store;
  REQUIRE(store.Set(kRound0, "k", "v").ok());
  CHECK(store.Delete(kRound0, "k").value());
  CHECK_FALSE(store.Delete(kRound0, "k").value());
}

TEST_CASE("a wait is released the moment its last key is set, and only then") {
  KeyValueStore store;
  int released = 0;
  auto id = store.WaitAsync(kRound0, {"a", "b"}, [&] { ++released; });
  REQUIRE(id.ok());
  REQUIRE(store.Set(kRound0, "a", "1").ok());
  CHECK(released == 0);
  REQUIRE(store.Set(kRound1, "b", "1").ok());  // another round: not ours
  CHECK(released == 0);
  CHECK(store.Add(kRound0, "b", 1).ok());
  CHECK(released == 1);
  CHECK(store.pending_waiters() == 0);
  CHECK_FALSE(store.CancelWait(id.value()));  // already released
}

TEST_CASE("a wait on keys that exist is released at once") {
  KeyValueStore store;
  REQUIRE(store.Set(kRound0, "a", "1").ok());
  bool released = false;
  REQUIRE(store.WaitAsync(kRound0, {"a"}, [&] { released = true; }).ok());
  CHECK(released);
}

TEST_CASE("a cancelled wait is never released") {
  KeyValueStore store;
  bool released = false;
  auto id = store.WaitAsync(kRound0, {"a"}, [&] { released = true; });
  CHECK(store.CancelWait(id.value()));
  REQUIRE(store.Set(kRound0, "a", "1").ok());
  CHECK_FALSE(released);
  CHECK(store.pending_waiters() == 0);
}

TEST_CASE("limits are errors, not crashes") {
  KeyValueLimits limits;
  limits.max_key_bytes = 8;
  limits.max_value_bytes = 16;
  limits.max_job_bytes = 40;
  limits.max_keys_per_wait = 2;
  KeyValueStore store(limits);
  CHECK(store.Set(kRound0, "", "v").code() == StatusCode::kInvalidArgument);
  CHECK(store.Set(kRound0, "too-long-key", "v").code() == StatusCode::kInvalidArgument);
  CHECK(store.Set(kRound0, "k", std::string(17, 'x')).code() == StatusCode::kResourceExhausted);
  REQUIRE(store.Set(kRound0, "k1", std::string(16, 'x')).ok());
  REQUIRE(store.Set(kRound1, "k2", std::string(16, 'x')).ok());
  CHECK(store.Set(kRound0, "k3", "xxx").code() == StatusCode::kResourceExhausted);  // 36 + 5 > 40
  CHECK(store.Set({"other", 0}, "k3", "xx").ok());  // the limit is per job
  REQUIRE(store.Delete(kRound0, "k1").value());
  CHECK(store.Set(kRound0, "k3", "xx").ok());  // deleting frees room
  CHECK(store.WaitAsync(kRound0, {}, [] {}).status().code() == StatusCode::kInvalidArgument);
  CHECK(store.WaitAsync(kRound0, {"a", "b", "c"}, [] {}).status().code() ==
        StatusCode::kInvalidArgument);
}

TEST_CASE("dropping a job forgets its keys in every round and frees its budget") {
  KeyValueLimits limits;
  limits.max_job_bytes = 64;
  KeyValueStore store(limits);
  REQUIRE(store.Set({"old", 0}, "k", std::string(30, 'x')).ok());
  REQUIRE(store.Set({"old", 3}, "k", std::string(30, 'x')).ok());
  REQUIRE(store.Set({"other", 0}, "k", "kept").ok());
  REQUIRE(store.DropJob("old").ok());
  CHECK(store.Get({"old", 0}, "k").status().code() == StatusCode::kNotFound);
  CHECK(store.Get({"old", 3}, "k").status().code() == StatusCode::kNotFound);
  CHECK(store.Get({"other", 0}, "k").value() == "kept");
  CHECK(store.Set({"old", 4}, "k", std::string(60, 'y')).ok());  // the whole budget again
}

TEST_CASE("the store's totals over every job and every pending wait are bounded") {
  KeyValueLimits limits;
  limits.max_total_bytes = 100;
  limits.max_waited_keys_per_job = 3;
  limits.max_waited_keys = 5;
  limits.max_job_id_bytes = 8;
  KeyValueStore store(limits);
  REQUIRE(store.Set({"a", 0}, "k", std::string(60, 'x')).ok());
  Status full = store.Set({"b", 0}, "k", std::string(60, 'x'));
  CHECK(full.code() == StatusCode::kResourceExhausted);
  CHECK(full.message().find("more than 100 bytes for all its jobs") != std::string::npos);
  REQUIRE(store.DropJob("a").ok());
  REQUIRE(store.Set({"b", 0}, "k", std::string(60, 'x')).ok());
  CHECK(store.Set({"a-long-job", 0}, "k", "v").message() ==
        "a job id of 10 bytes is over the limit of 8");

  // Each job's pending waits miss at most 3 keys, and all of them together at most 5.
  auto first = store.WaitAsync({"a", 0}, {"x", "y"}, [] {});
  REQUIRE(first.ok());
  Status job_full = store.WaitAsync({"a", 0}, {"p", "q"}, [] {}).status();
  CHECK(job_full.code() == StatusCode::kResourceExhausted);
  CHECK(job_full.message().find("job 'a' has pending waits that miss 2 keys") != std::string::npos);
  REQUIRE(store.Set({"a", 0}, "x", "1").ok());  // one key less missed
  REQUIRE(store.WaitAsync({"a", 0}, {"p"}, [] {}).ok());
  REQUIRE(store.WaitAsync({"c", 0}, {"p", "q"}, [] {}).ok());
  Status all_full = store.WaitAsync({"d", 0}, {"p", "q"}, [] {}).status();
  CHECK(all_full.message().find("the rendezvous server's pending waits already miss 4") !=
        std::string::npos);
  CHECK(store.CancelWait(*first));
  CHECK(store.WaitAsync({"d", 0}, {"p"}, [] {}).ok());
}
