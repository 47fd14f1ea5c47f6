// TorchStore: the keys, values and waits of a store that PyTorch's TCPStore clients speak to, as
// torch 1.13's and 2.x's clients speak (docs/torch_store_protocol.md), with no I/O of its own:
// its owner hands it each connection's bytes as they come and writes what it answers. It is
// what a launcher's agent store serves at MASTER_ADDR:MASTER_PORT (torchrun 2.x's
// TORCHELASTIC_USE_AGENT_STORE=True), so that no rank hosts the store, or waits for one that is
// not listening yet.
//
// Each connection's dialect is told by its first bytes: a 2.x client opens with VALIDATE and
// its magic number, a 1.13 client with an ordinary command (1.13 numbers its commands
// differently). A connection that sends what no client sends (an unknown command, a key or
// value over kMaxBytes, a wrong magic number) is to be closed, and nothing it sent is kept.
//
// Not thread-safe: one owner, one thread.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace ddprun {

class TorchStore {
 public:
  using ConnectionId = uint64_t;
  // The largest key or value taken: a length above it ends the connection.
  static constexpr uint64_t kMaxBytes = 64ull << 20;

  // What the owner does for the bytes it handed over.
  struct Answer {
    ConnectionId connection;
    std::string bytes;  // to write to `connection`, in order
  };
  struct Outcome {
    std::vector<Answer> answers;  // to this and other connections (a WAIT that ends)
    // The connection sent what no client sends: close it (after the answers, which are
    // never to it then). `why` says what, for a log line.
    bool close = false;
    std::string why;
  };

  // The bytes `connection` sent (a new connection is known from its first bytes). A command
  // may come in pieces: the part of one not yet complete waits for the rest.
  Outcome Receive(ConnectionId connection, std::string_view bytes);
  // `connection` is gone: its waits end, what it had not finished sending is dropped.
  void Closed(ConnectionId connection);
  // Forgets every key and queue (a new attempt's workers start from nothing, as each attempt
  // of torchrun 1.13 had a store prefix of its own); waits of connections still open end
  // nowhere, as their connections belong to workers that are gone.
  void Clear();

  size_t key_count() const { return values_.size(); }

 private:
  enum class Dialect { kUnknown, kTorch113, kTorch2 };
  struct Connection {
    Dialect dialect = Dialect::kUnknown;
    std::string pending;  // received, not yet a whole command
  };
  // A connection's WAIT or BARRIER: answered once `missing` keys are all written.
  struct Waiter {
    size_t missing = 0;
  };

  // Parses and runs one command from the front of `connection.pending`; false when it is not
  // complete yet. Sets outcome.close on a command no client sends.
  bool RunOne(ConnectionId id, Connection& connection, Outcome& outcome);
  // A write to `key`: the waits on it that now have every key end (with wake_one, a queue's
  // push, the first of them only: one value, one pop).
  void Written(const std::string& key, Outcome& outcome, bool wake_one);
  // Registers `id` as waiting for each of `keys` not yet there; true when none is missing.
  bool WaitFor(ConnectionId id, const std::vector<std::string>& keys);
  bool Has(const std::string& key) const;
  void CancelWaits(ConnectionId id);

  std::map<ConnectionId, Connection> connections_;
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> queues_;  // front first
  std::map<ConnectionId, Waiter> waiters_;
  std::map<std::string, std::set<ConnectionId>> waiting_on_;
};

}  // namespace ddprun
