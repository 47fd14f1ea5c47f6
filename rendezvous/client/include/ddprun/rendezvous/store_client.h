// StoreClient: a blocking client of the rendezvous key-value store, bound to one job and round.
// Workers build it from the environment ddprun gives them (FromEnvironment). Every call is bounded
// by the client's rpc_timeout (Wait by its own timeout plus rpc_timeout) and returns an error value
// on failure. Thread-safe: calls may be made concurrently from several threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"

namespace ddprun {

struct StoreClientOptions {
  // "host:port" of the rendezvous server, or of several that serve the same keys (daemons on
  // one etcd cluster: "h0:29400,h1:29400"): calls go to the one that last answered, and move to
  // the next at once when it cannot be reached.
  std::string address;
  ClientSecurity security;  // the token sent with every call, and TLS
  std::string job_id;
  int64_t round = 0;
  std::chrono::milliseconds rpc_timeout{30'000};  // bound on each call but Wait
  // How long a call is retried, with backoff, while the server is unreachable (UNAVAILABLE: it
  // may be restarting under a running job). 0: not retried.
  std::chrono::milliseconds retry_timeout{0};
};

struct StoreCompareSetOutcome {
  std::string value;  // what the key holds after the call
  bool swapped = false;
};

class StoreClient {
 public:
  // Reads DDPRUN_STORE_ADDR, DDPRUN_TOKEN, DDPRUN_JOB_ID and DDPRUN_ROUND, and the TLS files
  // named by DDPRUN_TLS_CA, DDPRUN_TLS_CERT and DDPRUN_TLS_KEY when set.
  // INVALID_ARGUMENT naming the first variable that is missing or malformed.
  static Result<std::unique_ptr<StoreClient>> FromEnvironment();
  static std::unique_ptr<StoreClient> Connect(const StoreClientOptions& options);

  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  Status Set(const std::string& key, const std::string& value);
  // NOT_FOUND when the key is not set.
  Result<std::string> Get(const std::string& key);
  // Blocks until every key is set; DEADLINE_EXCEEDED after `timeout`.
  Status Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  Result<int64_t> Add(const std::string& key, int64_t delta);
  Result<StoreCompareSetOutcome> CompareSet(const std::string& key, const std::string& expected,
                                            const std::string& desired);
  Result<bool> Delete(const std::string& key);

  const StoreClientOptions& options() const { return options_; }

 private:
  struct Impl;
  explicit StoreClient(StoreClientOptions options);

  StoreClientOptions options_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun
