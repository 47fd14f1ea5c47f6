// EtcdClient: ddprun's own client of an etcd cluster, over etcd's v3 gRPC API
// (proto/etcd/etcd_v3.proto) with the gRPC already in the build; no third-party etcd client.
// It speaks to one member at a time and moves to the next listed member when the one it uses
// cannot answer (unreachable, or without a quorum), so a cluster that has lost a minority of its
// members serves on. Keys and values are bytes. Thread-safe: calls may come from any thread.
//
// Errors are Status codes: UNAVAILABLE when no member could answer within the call timeout (the
// message names each member's error), FAILED_PRECONDITION for a lease that is gone,
// UNAUTHENTICATED for refused credentials, INVALID_ARGUMENT for settings that cannot work.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "ddprun/etcd/etcd_endpoints.h"
#include "etcd/etcd_v3.pb.h"

namespace ddprun::etcd {

struct EtcdSettings {
  std::vector<std::string> endpoints = {};  // "host:port" of each member; tried in this order
  // etcd's own authentication (a user etcd knows); empty user: none.
  std::string user = {};
  std::string password = {};
  // TLS: the CA that signed the members' certificates; with cert and key, a client certificate.
  std::string ca_pem = {};
  std::string cert_pem = {};
  std::string key_pem = {};
  // Each attempt's deadline, and how long a call goes on trying: it goes round the members,
  // pausing between rounds, while each says "ask another" (down, or electing a leader) and
  // less than this has passed since its first attempt.
  std::chrono::milliseconds call_timeout{2000};
};

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// Keys under a prefix, as one read at one revision.
struct RangeRead {
  std::vector<KeyValue> kvs;
  int64_t revision = 0;  // the store's revision the read saw
};

// What a transaction did: whether every compare held, the revision it ran at, and the
// response of each operation it ran (success ops or failure ops).
struct TxnOutcome {
  bool succeeded = false;
  int64_t revision = 0;
  std::vector<etcdserverpb::ResponseOp> responses;
};

// A change of one key, as a watch sees it.
struct KeyChange {
  bool deleted = false;  // else a put
  KeyValue kv;           // after the put; for a delete, the key and the revision of the delete
};

// The range end that selects every key starting with `prefix` (etcd's prefix convention).
std::string PrefixEnd(const std::string& prefix);

class EtcdClient {
 public:
  // Opens channels to every member; checks nothing yet (the first call finds a member). With a
  // user, authenticates at the first call that needs it.
  static Result<std::unique_ptr<EtcdClient>> Open(EtcdSettings settings);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // Linearizable reads (through the raft leader's quorum). `timeout`: how long to try (the
  // settings' call timeout when zero).
  Result<std::optional<KeyValue>> Get(
      const std::string& key, std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Result<RangeRead> GetPrefix(const std::string& prefix);

  // The revision the write made.
  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  Result<int64_t> DeletePrefix(const std::string& prefix);  // how many keys went
  Result<TxnOutcome> Txn(const etcdserverpb::TxnRequest& request);

  // Waits at most `timeout` (on each member it tries) for the first change of `key` after
  // revision `after_revision`;
  // nullopt when none came. A change made while the member watched is not missed if that member
  // fails: the watch resumes on another from the same revision.
  Result<std::optional<KeyChange>> WaitForChange(const std::string& key, int64_t after_revision,
                                                 std::chrono::milliseconds timeout);

  // Calls `on_change` for every change of a key under `prefix` from revision `from_revision` on,
  // in order, on the calling thread, until `stop` (from another thread) or an error no member
  // can get past (the revision compacted away: OUT_OF_RANGE). A member that fails mid-watch is
  // left for the next, from the revision after the last change seen: none is missed or repeated.
  class WatchStop;
  Status WatchPrefix(const std::string& prefix, int64_t from_revision,
                     const std::function<void(const KeyChange&)>& on_change, WatchStop& stop);

  // A lease of `ttl` (etcd rounds up to whole seconds, at least its minimum); its id.
  Result<int64_t> GrantLease(std::chrono::seconds ttl);
  // Renews the lease once; the seconds it has left. FAILED_PRECONDITION when it is gone.
  // `timeout`: how long to try (the settings' call timeout when zero).
  Result<int64_t> KeepLeaseAlive(int64_t lease,
                                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  Status RevokeLease(int64_t lease);

  struct MemberReport {
    // The member answering and its version: "127.0.0.1:2379 (etcd 3.4.23)".
    std::string description;
    uint64_t cluster_id = 0;  // the cluster's, the same from every member
  };
  // What the member answering now says of itself.
  Result<MemberReport> MemberStatus();

 private:
  struct Members;
  explicit EtcdClient(std::unique_ptr<Members> members);
  std::unique_ptr<Members> members_;
};

class EtcdClient::WatchStop {
 public:
  // Ends the watch: it returns OK soon after, whatever it was waiting on.
  void Stop();
  bool stopped();

 private:
  friend class EtcdClient;
  std::mutex mu_;
  std::condition_variable stopped_changed_;
  bool stopped_ = false;
  void* context_ = nullptr;  // the grpc::ClientContext of the watch's current stream
};

}  // namespace ddprun::etcd
