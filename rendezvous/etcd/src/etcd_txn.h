// The pieces of etcd transactions that ddprun's writers share: a compare that holds while a key
// is as it was read, and the operations a transaction runs when its compares hold.
#pragma once

#include <optional>
#include <string>

#include "ddprun/etcd/etcd_client.h"
#include "etcd/etcd_v3.pb.h"

namespace ddprun::etcd {

// A compare that holds while `key` is as `seen` left it: absent, or at that mod revision.
void CompareUnchanged(etcdserverpb::TxnRequest& txn, const std::string& key,
                      const std::optional<KeyValue>& seen);

// A put of `value` under `key` (attached to `lease` unless 0) when the compares hold.
void AddPut(etcdserverpb::TxnRequest& txn, const std::string& key, const std::string& value,
            int64_t lease = 0);

// A delete of exactly `key` when the compares hold.
void AddDelete(etcdserverpb::TxnRequest& txn, const std::string& key);

}  // namespace ddprun::etcd
