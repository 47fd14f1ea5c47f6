// TorchStore: the bytes torch 2.x's and 1.13's TCPStore clients send, as captured between real
// ranks and a real server (docs/torch_store_protocol.md), and what the store answers; commands
// in pieces, waits answered when their keys come, and what no client sends closing the
// connection.
#include "ddprun/base/torch_store.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>

using namespace ddprun;
using namespace std::string_literals;

namespace {

// A command's bytes: its type, then strings as their u64 length and bytes, integers
// little-endian.
struct Bytes {
  std::string text;
  explicit Bytes(int command) : text(1, static_cast<char>(command)) {}
  Bytes& Str(const std::string& value) {
    Int(static_cast<int64_t>(value.size()));
    text += value;
    return *this;
  }
  template <typename Integer = int64_t>
  Bytes& Int(Integer value) {
    text.append(reinterpret_cast<const char*>(&value), sizeof(value));
    return *this;
  }
  operator std::string() const { return text; }
  operator std::string_view() const { return text; }
};

// torch 2.x's numbering.
enum Torch2 {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kGetNumKeys,
  kDeleteKey,
  kAppend,
  kMultiGet,
  kMultiSet,
  kCancelWait,
  kPing,
  kQueuePush,
  kQueuePop,
  kQueueLen,
  kListKeys,
  kBarrier
};
// torch 1.13's.
enum Torch113 {
  kOldSet,
  kOldCompareSet,
  kOldGet,
  kOldAdd,
  kOldCheck,
  kOldWait,
  kOldGetNumKeys,
  kOldWatchKey,
  kOldDeleteKey
};

const std::string kOpening = Bytes(kValidate).Int<uint32_t>(0x3C85F7CE);

std::string Value(const std::string& value) { return Bytes(0).Str(value).text.substr(1); }
std::string Int64(int64_t value) { return Bytes(0).Int(value).text.substr(1); }

// What `store` answers connection `id`'s `bytes`, all to `id`; fails on an answer to another.
std::string AnswerTo(TorchStore& store, TorchStore::ConnectionId id, const std::string& bytes) {
  const auto outcome = store.Receive(id, bytes);
  INFO(outcome.why);
  CHECK_FALSE(outcome.close);
  std::string answered;
  for (const auto& answer : outcome.answers) {
    CHECK(answer.connection == id);
    answered += answer.bytes;
  }
  return answered;
}

}  // namespace

TEST_CASE("a torch 2.x client's opening is validated and its ping echoed", "[torch_store]") {
  TorchStore store;
  CHECK(AnswerTo(store, 1, kOpening + std::string(Bytes(kPing).Int<uint32_t>(4242))) ==
        Bytes(0).Int<uint32_t>(4242).text.substr(1));
}

TEST_CASE("set, get, add, check, delete and the key count as torch 2.x numbers them",
          "[torch_store]") {
  TorchStore store;
  AnswerTo(store, 1, kOpening);
  // The capture's SET of /k1 = "v1", byte for byte.
  const std::string set = "\x01\x03\0\0\0\0\0\0\0/k1\x02\0\0\0\0\0\0\0v1"s;
  CHECK(set == std::string(Bytes(kSet).Str("/k1").Str("v1")));
  CHECK(AnswerTo(store, 1, set).empty());
  CHECK(AnswerTo(store, 1, Bytes(kGet).Str("/k1")) == Value("v1"));
  CHECK(AnswerTo(store, 1, Bytes(kGet).Str("/absent")) == Value(""));
  CHECK(AnswerTo(store, 1, Bytes(kAdd).Str("/cnt").Int<int64_t>(-2)) == Int64(-2));
  CHECK(AnswerTo(store, 1, Bytes(kAdd).Str("/cnt").Int<int64_t>(5)) == Int64(3));
  CHECK(AnswerTo(store, 1, Bytes(kGet).Str("/cnt")) == Value("3"));  // decimal text
  CHECK(AnswerTo(store, 1, Bytes(kCheck).Int<uint64_t>(2).Str("/k1").Str("/cnt")) == "\0"s);
  CHECK(AnswerTo(store, 1, Bytes(kCheck).Int<uint64_t>(1).Str("/absent")) == "\x01");
  CHECK(AnswerTo(store, 1, Bytes(kGetNumKeys)) == Int64(2));
  CHECK(AnswerTo(store, 1, Bytes(kDeleteKey).Str("/k1")) == Int64(1));
  CHECK(AnswerTo(store, 1, Bytes(kDeleteKey).Str("/k1")) == Int64(0));
  CHECK(AnswerTo(store, 1, Bytes(kListKeys)) == Int64(1) + Value("/cnt"));
}

TEST_CASE("compare_set stores only where the value is the one expected", "[torch_store]") {
  TorchStore store;
  AnswerTo(store, 1, kOpening);
  auto cas = [&](const std::string& key, const std::string& expected, const std::string& desired) {
    return AnswerTo(store, 1, Bytes(kCompareSet).Str(key).Str(expected).Str(desired));
  };
  CHECK(cas("/a", "", "new") == Value("new"));  // absent, nothing expected: stored
  CHECK(cas("/b", "x", "y") == Value("x"));     // absent, something expected: not stored
  CHECK(AnswerTo(store, 1, Bytes(kCheck).Int<uint64_t>(1).Str("/b")) == "\x01");
  CHECK(cas("/a", "new", "newer") == Value("newer"));  // as expected: stored
  CHECK(cas("/a", "new", "other") == Value("newer"));  // not as expected: the value there
}

TEST_CASE("a wait is answered when the last of its keys is written, by any client",
          "[torch_store]") {
  TorchStore store;
  AnswerTo(store, 1, kOpening);
  AnswerTo(store, 2, kOpening);
  CHECK(AnswerTo(store, 1, Bytes(kWait).Int<uint64_t>(2).Str("/a").Str("/b")).empty());
  auto outcome = store.Receive(2, Bytes(kSet).Str("/a").Str("1"));
  CHECK(outcome.answers.empty());
  outcome = store.Receive(2, Bytes(kAdd).Str("/b").Int<int64_t>(1));
  REQUIRE(outcome.answers.size() == 2);
  CHECK(outcome.answers[0].connection == 2);  // ADD's own answer
  CHECK(outcome.answers[1].connection == 1);
  CHECK(outcome.answers[1].bytes == "\0"s);  // STOP_WAITING
  // Keys already there: at once.
  CHECK(AnswerTo(store, 1, Bytes(kWait).Int<uint64_t>(1).Str("/a")) == "\0"s);
}

TEST_CASE("a cancelled or closed wait is answered never after", "[torch_store]") {
  TorchStore store;
  AnswerTo(store, 1, kOpening);
  AnswerTo(store, 2, kOpening);
  AnswerTo(store, 3, kOpening);
  CHECK(AnswerTo(store, 1, Bytes(kWait).Int<uint64_t>(1).Str("/k")).empty());
  CHECK(AnswerTo(store, 1, Bytes(kCancelWait)) == "\x01");  // WAIT_CANCELED
  CHECK(AnswerTo(store, 1, Bytes(kCancelWait)) == "\x01");  // always, even with none pending
  CHECK(AnswerTo(store, 2, Bytes(kWait).Int<uint64_t>(1).Str("/k")).empty());
  store.Closed(2);
  CHECK(store.Receive(3, Bytes(kSet).Str("/k").Str("v")).answers.empty());
}

TEST_CASE("torch 1.13's numbering, its fields sent one by one", "[torch_store]") {
  TorchStore store;
  const std::string set = Bytes(kOldSet).Str("/worker/attempt_0/k").Str("vm");
  for (char byte : set) CHECK(AnswerTo(store, 1, std::string(1, byte)).empty());
  CHECK(AnswerTo(store, 1, Bytes(kOldWait).Int<uint64_t>(1).Str("/worker/attempt_0/k")) == "\0"s);
  CHECK(AnswerTo(store, 1, Bytes(kOldGet).Str("/worker/attempt_0/k")) == Value("vm"));
  CHECK(AnswerTo(store, 1, Bytes(kOldAdd).Str("init/").Int<int64_t>(1)) == Int64(1));
  CHECK(AnswerTo(store, 1, Bytes(kOldGetNumKeys)) == Int64(2));
  // A second connection of the client's own that sends nothing stays open.
  CHECK(store.Receive(2, "").answers.empty());
}

TEST_CASE("a barrier lets its clients through once all have come", "[torch_store]") {
  TorchStore store;
  AnswerTo(store, 1, kOpening);
  AnswerTo(store, 2, kOpening);
  CHECK(AnswerTo(store, 1, Bytes(kBarrier).Str("/bk").Int<int64_t>(2)).empty());
  const auto outcome = store.Receive(2, Bytes(kBarrier).Str("/bk").Int<int64_t>(2));
  REQUIRE(outcome.answers.size() == 2);
  CHECK(outcome.answers[0].connection == 2);
  CHECK(outcome.answers[1].connection == 1);
  CHECK(AnswerTo(store, 1, Bytes(kGet).Str("/bk")) == Value("2"));
}

TEST_CASE("a queue's push wakes one waiting pop, in order", "[torch_store]") {
  TorchStore store;
  for (TorchStore::ConnectionId id : {1, 2, 3}) AnswerTo(store, id, kOpening);
  CHECK(AnswerTo(store, 1, Bytes(kWait).Int<uint64_t>(1).Str("/q")).empty());
  CHECK(AnswerTo(store, 2, Bytes(kWait).Int<uint64_t>(1).Str("/q")).empty());
  for (const TorchStore::ConnectionId woken : {1, 2}) {
    const auto outcome =
        store.Receive(3, Bytes(kQueuePush).Str("/q").Str(woken == 1 ? "first" : "second"));
    REQUIRE(outcome.answers.size() == 1);
    CHECK(outcome.answers[0].connection == woken);
  }
  CHECK(AnswerTo(store, 1, Bytes(kQueueLen).Str("/q")) == Int64(2));
  CHECK(AnswerTo(store, 1, Bytes(kQueuePop).Str("/q")) == Int64(2) + Value("first"));
  CHECK(AnswerTo(store, 1, Bytes(kQueuePop).Str("/q")) == Int64(1) + Value("second"));
  CHECK(AnswerTo(store, 1, Bytes(kQueuePop).Str("/q")) == Int64(0));
}

TEST_CASE("a new attempt's store starts from nothing", "[torch_store]") {
  TorchStore store;
  AnswerTo(store, 1, kOpening);
  AnswerTo(store, 1, Bytes(kSet).Str("/default_pg/0//cpu//0/1").Str("old address"));
  store.Clear();
  CHECK(store.key_count() == 0);
  CHECK(AnswerTo(store, 1, Bytes(kCheck).Int<uint64_t>(1).Str("/default_pg/0//cpu//0/1")) ==
        "\x01");
}

TEST_CASE("what no TCPStore client sends closes the connection, and keeps nothing",
          "[torch_store]") {
  struct Case {
    const char* what;
    std::string bytes;
  };
  const Case bad = GENERATE(
      Case{"a command torch 2.x has not", kOpening + std::string(1, '\x63')},
      Case{"a command torch 1.13 has not", std::string(1, '\x09')},
      // (A first VALIDATE with another number reads as torch 1.13's SET: its key's length.)
      Case{"a VALIDATE with a wrong magic number",
           kOpening + std::string(Bytes(kValidate).Int<uint32_t>(0x12345678))},
      Case{"a key of 1 TiB", kOpening + std::string(Bytes(kSet).Int<uint64_t>(1ull << 40))},
      Case{"a wait for 2^40 keys", kOpening + std::string(Bytes(kWait).Int<uint64_t>(1ull << 40))},
      Case{"torch 1.13's key callbacks", Bytes(kOldWatchKey).Str("/k")});
  INFO(bad.what);
  TorchStore store;
  const auto outcome = store.Receive(1, bad.bytes);
  CHECK(outcome.close);
  CHECK_FALSE(outcome.why.empty());
  CHECK(outcome.answers.empty());
  CHECK(store.key_count() == 0);
  // ADD to a value that is not a number, after it was set.
  TorchStore other;
  AnswerTo(other, 1, kOpening + std::string(Bytes(kSet).Str("/k").Str("text")));
  CHECK(other.Receive(1, Bytes(kAdd).Str("/k").Int<int64_t>(1)).close);
}
