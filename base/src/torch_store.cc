// TorchStore; see torch_store.h. The bytes are docs/torch_store_protocol.md's: a command's type
// in one byte, integers little-endian, a string or value as its u64 length and its bytes.
#include "ddprun/base/torch_store.h"

#include <charconv>
#include <cstring>

namespace ddprun {
namespace {

// The commands, by what they do; each dialect numbers them its own way.
enum class Command {
  kValidate,
  kSet,
  kCompareSet,
  kGet,
  kAdd,
  kCheck,
  kWait,
  kGetNumKeys,
  kWatchKey,
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
  kBarrier,
};

// torch 2.x's numbering, in order from 0; and 1.13's, which had no VALIDATE and fewer commands.
constexpr Command kTorch2Commands[] = {
    Command::kValidate,   Command::kSet,      Command::kCompareSet, Command::kGet,
    Command::kAdd,        Command::kCheck,    Command::kWait,       Command::kGetNumKeys,
    Command::kDeleteKey,  Command::kAppend,   Command::kMultiGet,   Command::kMultiSet,
    Command::kCancelWait, Command::kPing,     Command::kQueuePush,  Command::kQueuePop,
    Command::kQueueLen,   Command::kListKeys, Command::kBarrier};
constexpr Command kTorch113Commands[] = {
    Command::kSet,  Command::kCompareSet, Command::kGet,      Command::kAdd,      Command::kCheck,
    Command::kWait, Command::kGetNumKeys, Command::kWatchKey, Command::kDeleteKey};

// A 2.x connection's first five bytes: VALIDATE (0) and this number, little-endian.
constexpr char kValidateBytes[] = {0x00, static_cast<char>(0xCE), static_cast<char>(0xF7),
                                   static_cast<char>(0x85), 0x3C};
// The most keys one WAIT, CHECK or MULTI_* names.
constexpr uint64_t kMaxKeys = 1 << 20;
// WAIT's and CHECK's answers.
constexpr char kStopWaiting = 0, kWaitCanceled = 1, kReady = 0, kNotReady = 1;

// Reads a command's fields from the front of what a connection sent. A read past the end
// (the rest not here yet) or of a length over the bounds (`bad`) fails; the command is then
// read again from its start once more has come.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  size_t consumed() const { return at_; }
  bool bad() const { return bad_; }

  template <typename Integer>
  bool Read(Integer& value) {
    if (data_.size() - at_ < sizeof(Integer)) return false;
    std::memcpy(&value, data_.data() + at_, sizeof(Integer));  // little-endian, as the host
    at_ += sizeof(Integer);
    return true;
  }
  bool Bytes(std::string& out) {
    uint64_t size = 0;
    const size_t start = at_;
    if (!Read(size)) return false;
    if (size > TorchStore::kMaxBytes) {
      bad_ = true;
      return false;
    }
    if (data_.size() - at_ < size) {
      at_ = start;
      return false;
    }
    out.assign(data_.data() + at_, size);
    at_ += size;
    return true;
  }
  bool Count(uint64_t& count) {
    if (!Read(count)) return false;
    if (count > kMaxKeys) {
      bad_ = true;
      return false;
    }
    return true;
  }
  bool Keys(std::vector<std::string>& keys) {
    uint64_t count = 0;
    if (!Count(count)) return false;
    keys.resize(count);
    for (auto& key : keys) {
      if (!Bytes(key)) return false;
    }
    return true;
  }

 private:
  std::string_view data_;
  size_t at_ = 0;
  bool bad_ = false;
};

std::string Int64Bytes(int64_t value) {
  std::string out(sizeof(value), '\0');
  std::memcpy(out.data(), &value, sizeof(value));
  return out;
}

std::string ValueBytes(const std::string& value) {
  return Int64Bytes(static_cast<int64_t>(value.size())) + value;
}

// ADD's counter: the value as decimal text, as torch writes it; false when it is not one.
bool ParseCounter(const std::string& text, int64_t& value) {
  const char* end = text.data() + text.size();
  auto [stop, error] = std::from_chars(text.data(), end, value);
  return error == std::errc() && stop == end;
}

}  // namespace

TorchStore::Outcome TorchStore::Receive(ConnectionId id, std::string_view bytes) {
  Outcome outcome;
  Connection& connection = connections_[id];
  connection.pending.append(bytes);
  while (!outcome.close && RunOne(id, connection, outcome)) {
  }
  if (outcome.close) {
    Closed(id);
    std::erase_if(outcome.answers, [id](const Answer& answer) { return answer.connection == id; });
  }
  return outcome;
}

void TorchStore::Closed(ConnectionId id) {
  CancelWaits(id);
  connections_.erase(id);
}

void TorchStore::Clear() {
  values_.clear();
  queues_.clear();
  waiters_.clear();
  waiting_on_.clear();
}

bool TorchStore::RunOne(ConnectionId id, Connection& connection, Outcome& outcome) {
  std::string_view data = connection.pending;
  if (data.empty()) return false;
  if (connection.dialect == Dialect::kUnknown) {
    // A 2.x client always opens with VALIDATE; a 1.13 command is longer than that opening.
    const size_t seen = std::min(data.size(), sizeof(kValidateBytes));
    const bool validate_so_far = std::memcmp(data.data(), kValidateBytes, seen) == 0;
    if (validate_so_far && seen < sizeof(kValidateBytes)) return false;
    connection.dialect = validate_so_far ? Dialect::kTorch2 : Dialect::kTorch113;
  }
  auto fail = [&outcome](std::string why) {
    outcome.close = true;
    outcome.why = std::move(why);
    return false;
  };
  Reader in(data);
  uint8_t code = 0;
  in.Read(code);
  const bool torch2 = connection.dialect == Dialect::kTorch2;
  const size_t known = torch2 ? std::size(kTorch2Commands) : std::size(kTorch113Commands);
  if (code >= known) {
    return fail("command " + std::to_string(code) + " is not one of torch " +
                (torch2 ? "2.x" : "1.13") + "'s TCPStore commands");
  }
  const Command command = torch2 ? kTorch2Commands[code] : kTorch113Commands[code];
  auto answer = [&outcome, id](std::string bytes) {
    outcome.answers.push_back({id, std::move(bytes)});
  };
  // Each case reads its fields first (returning false while they are not all here) and only
  // then acts.
  bool complete = false;
  switch (command) {
    case Command::kValidate: {
      uint32_t magic = 0;
      if (!(complete = in.Read(magic))) break;
      uint32_t expected = 0;
      std::memcpy(&expected, kValidateBytes + 1, sizeof(expected));
      if (magic != expected) return fail("VALIDATE with a wrong magic number");
      break;
    }
    case Command::kPing: {
      uint32_t nonce = 0;
      if (!(complete = in.Read(nonce))) break;
      answer(std::string(reinterpret_cast<const char*>(&nonce), sizeof(nonce)));
      break;
    }
    case Command::kSet:
    case Command::kAppend:
    case Command::kQueuePush: {
      std::string key, value;
      if (!(complete = in.Bytes(key) && in.Bytes(value))) break;
      if (command == Command::kQueuePush) {
        queues_[key].push_back(std::move(value));
      } else if (command == Command::kAppend) {
        values_[key] += value;
      } else {
        values_[key] = std::move(value);
      }
      Written(key, outcome, /*wake_one=*/command == Command::kQueuePush);
      break;
    }
    case Command::kCompareSet: {
      std::string key, expected, desired;
      if (!(complete = in.Bytes(key) && in.Bytes(expected) && in.Bytes(desired))) break;
      auto found = values_.find(key);
      if (found == values_.end() ? expected.empty() : found->second == expected) {
        values_[key] = desired;
        answer(ValueBytes(desired));
        Written(key, outcome, false);
      } else {
        answer(ValueBytes(found == values_.end() ? expected : found->second));
      }
      break;
    }
    case Command::kGet: {
      std::string key;
      if (!(complete = in.Bytes(key))) break;
      auto found = values_.find(key);
      answer(ValueBytes(found == values_.end() ? std::string() : found->second));
      break;
    }
    case Command::kAdd: {
      std::string key;
      int64_t delta = 0;
      if (!(complete = in.Bytes(key) && in.Read(delta))) break;
      int64_t value = 0;
      auto found = values_.find(key);
      if (found != values_.end() && !ParseCounter(found->second, value)) {
        return fail("ADD to " + key + ", whose value is not a number");
      }
      value += delta;
      values_[key] = std::to_string(value);
      answer(Int64Bytes(value));
      Written(key, outcome, false);
      break;
    }
    case Command::kCheck:
    case Command::kWait:
    case Command::kMultiGet: {
      std::vector<std::string> keys;
      if (!(complete = in.Keys(keys))) break;
      if (command == Command::kCheck) {
        bool all = true;
        for (const auto& key : keys) all = all && Has(key);
        answer(std::string(1, all ? kReady : kNotReady));
      } else if (command == Command::kWait) {
        if (WaitFor(id, keys)) answer(std::string(1, kStopWaiting));
      } else {
        std::string values;
        for (const auto& key : keys) {
          auto found = values_.find(key);
          values += ValueBytes(found == values_.end() ? std::string() : found->second);
        }
        answer(std::move(values));
      }
      break;
    }
    case Command::kMultiSet: {
      uint64_t count = 0;
      if (!(complete = in.Count(count))) break;
      std::vector<std::pair<std::string, std::string>> items(count);
      for (auto& [key, value] : items) {
        if (!(complete = in.Bytes(key) && in.Bytes(value))) break;
      }
      if (!complete) break;
      for (auto& [key, value] : items) {
        values_[key] = std::move(value);
        Written(key, outcome, false);
      }
      break;
    }
    case Command::kGetNumKeys:
      complete = true;
      answer(Int64Bytes(static_cast<int64_t>(values_.size())));
      break;
    case Command::kDeleteKey: {
      std::string key;
      if (!(complete = in.Bytes(key))) break;
      answer(Int64Bytes(static_cast<int64_t>(values_.erase(key))));
      break;
    }
    case Command::kCancelWait:
      complete = true;
      CancelWaits(id);
      answer(std::string(1, kWaitCanceled));
      break;
    case Command::kQueuePop: {
      std::string key;
      if (!(complete = in.Bytes(key))) break;
      auto& queue = queues_[key];
      std::string reply = Int64Bytes(static_cast<int64_t>(queue.size()));
      if (!queue.empty()) {
        reply += ValueBytes(queue.front());
        queue.erase(queue.begin());
      }
      answer(std::move(reply));
      break;
    }
    case Command::kQueueLen: {
      std::string key;
      if (!(complete = in.Bytes(key))) break;
      auto found = queues_.find(key);
      answer(Int64Bytes(static_cast<int64_t>(found == queues_.end() ? 0 : found->second.size())));
      break;
    }
    case Command::kListKeys: {
      complete = true;
      std::string reply = Int64Bytes(static_cast<int64_t>(values_.size()));
      for (const auto& entry : values_) reply += ValueBytes(entry.first);
      answer(std::move(reply));
      break;
    }
    case Command::kBarrier: {
      std::string key;
      int64_t world_size = 0;
      if (!(complete = in.Bytes(key) && in.Read(world_size))) break;
      int64_t arrived = 0;
      auto found = values_.find(key);
      if (found != values_.end() && !ParseCounter(found->second, arrived)) {
        return fail("BARRIER on " + key + ", whose value is not a number");
      }
      values_[key] = std::to_string(++arrived);
      if (arrived >= world_size) {
        answer(std::string(1, kStopWaiting));
        Written(key, outcome, false);
      } else {
        waiters_[id].missing = 1;
        waiting_on_[key].insert(id);
      }
      break;
    }
    case Command::kWatchKey:
      return fail("WATCH_KEY (torch 1.13's key callbacks) is not served");
  }
  if (in.bad()) return fail("a key, value or key count over the store's bounds");
  if (!complete) return false;
  connection.pending.erase(0, in.consumed());
  return true;
}

void TorchStore::Written(const std::string& key, Outcome& outcome, bool wake_one) {
  auto waiting = waiting_on_.find(key);
  if (waiting == waiting_on_.end()) return;
  std::vector<ConnectionId> woken(waiting->second.begin(), waiting->second.end());
  if (wake_one && woken.size() > 1) woken.resize(1);
  for (ConnectionId id : woken) {
    waiting->second.erase(id);
    auto waiter = waiters_.find(id);
    if (waiter == waiters_.end() || --waiter->second.missing > 0) continue;
    waiters_.erase(waiter);
    outcome.answers.push_back({id, std::string(1, kStopWaiting)});
  }
  if (waiting->second.empty()) waiting_on_.erase(waiting);
}

bool TorchStore::WaitFor(ConnectionId id, const std::vector<std::string>& keys) {
  size_t missing = 0;
  for (const auto& key : keys) {
    if (Has(key) || !waiting_on_[key].insert(id).second) continue;
    ++missing;
  }
  if (missing == 0) return true;
  waiters_[id].missing = missing;
  return false;
}

bool TorchStore::Has(const std::string& key) const {
  if (values_.count(key) > 0) return true;
  auto queue = queues_.find(key);
  return queue != queues_.end() && !queue->second.empty();
}

void TorchStore::CancelWaits(ConnectionId id) {
  if (waiters_.erase(id) == 0) return;
  for (auto it = waiting_on_.begin(); it != waiting_on_.end();) {
    it->second.erase(id);
    it = it->second.empty() ? waiting_on_.erase(it) : std::next(it);
  }
}

}  // namespace ddprun
