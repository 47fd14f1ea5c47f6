// CompareUnchanged, AddPut and AddDelete; see etcd_txn.h.
#include "etcd_txn.h"

namespace ddprun::etcd {

namespace pb = etcdserverpb;

void CompareUnchanged(pb::TxnRequest& txn, const std::string& key,
                      const std::optional<KeyValue>& seen) {
  auto* compare = txn.add_compare();
  compare->set_key(key);
  compare->set_result(pb::Compare::EQUAL);
  if (seen) {
    compare->set_target(pb::Compare::MOD);
    compare->set_mod_revision(seen->mod_revision);
  } else {
    compare->set_target(pb::Compare::CREATE);
    compare->set_create_revision(0);
  }
}

void AddPut(pb::TxnRequest& txn, const std::string& key, const std::string& value, int64_t lease) {
  auto* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(value);
  if (lease != 0) put->set_lease(lease);
}

void AddDelete(pb::TxnRequest& txn, const std::string& key) {
  txn.add_success()->mutable_request_delete_range()->set_key(key);
}

}  // namespace ddprun::etcd
