// Leadership; see leadership.h.
#include "ddprun/etcd/leadership.h"

#include <algorithm>

#include "etcd_txn.h"

namespace ddprun::etcd {

namespace pb = etcdserverpb;

namespace {

// A renewal tried when the leader may no longer act still gets this long: its answer lets it
// act again.
constexpr std::chrono::milliseconds kShortestRenewal{100};

}  // namespace

pb::TxnRequest CreateIfAbsent(const std::string& key, const std::string& value, int64_t lease) {
  pb::TxnRequest txn;
  CompareUnchanged(txn, key, std::nullopt);  // absent
  AddPut(txn, key, value, lease);
  return txn;
}

Leadership::Leadership(EtcdClient& client, LeadershipSettings settings,
                       const SteadyTimeSource& time)
    : client_(client), settings_(std::move(settings)), time_(time) {}

Result<bool> Leadership::Step() {
  // Taken before the request leaves: etcd's TTL counts from when it applies the grant or the
  // renewal, which is later.
  const auto sent = time_.Now();
  if (leads()) {
    // Tried no longer than the leader may act: one cut off from etcd finds out then, not a call
    // timeout later (EtcdJobLeadership wakes at that moment).
    const auto may_act_for =
        std::chrono::duration_cast<std::chrono::milliseconds>(may_act_until_ - sent);
    auto left = client_.KeepLeaseAlive(lease_, std::max(may_act_for, kShortestRenewal));
    if (left.status().code() == StatusCode::kFailedPrecondition) {  // the lease is gone
      Lost();
      return false;
    }
    if (!left.ok()) return left.status();
    may_act_until_ = sent + std::chrono::seconds(*left) - settings_.margin;
    return true;
  }
  auto lease = client_.GrantLease(settings_.ttl);
  if (!lease.ok()) return lease.status();
  // A grant retried on another member may leave an unused lease behind; it expires by itself.
  auto created = client_.Txn(CreateIfAbsent(settings_.key, settings_.holder, *lease));
  if (!created.ok() || !created->succeeded) {
    // Someone else holds the key (or the answer was lost: a create applied but unanswered is
    // undone with the lease, and the next step campaigns again).
    (void)client_.RevokeLease(*lease);
    if (!created.ok()) return created.status();
    return false;
  }
  lease_ = *lease;
  create_revision_ = created->revision;
  may_act_until_ = sent + settings_.ttl - settings_.margin;
  return true;
}

bool Leadership::MayAct() const { return leads() && time_.Now() < may_act_until_; }

Result<TxnOutcome> Leadership::FencedTxn(const pb::TxnRequest& txn) {
  if (!MayAct()) {
    return FailedPreconditionError("not the leader of " + settings_.key +
                                   (leads() ? " any more: its lease may have run out" : ""));
  }
  // The fence is the outer transaction, so that a failed fence and the caller's own failed
  // compares are told apart.
  pb::TxnRequest fenced;
  auto* fence = fenced.add_compare();
  fence->set_key(settings_.key);
  fence->set_target(pb::Compare::CREATE);
  fence->set_result(pb::Compare::EQUAL);
  fence->set_create_revision(create_revision_);
  *fenced.add_success()->mutable_request_txn() = txn;
  auto outcome = client_.Txn(fenced);
  if (!outcome.ok()) return outcome.status();
  if (!outcome->succeeded) {
    Lost();
    return FailedPreconditionError("no longer the leader of " + settings_.key +
                                   ": another holder has it");
  }
  const pb::TxnResponse& inner = outcome->responses.at(0).response_txn();
  TxnOutcome result;
  result.succeeded = inner.succeeded();
  result.revision = outcome->revision;
  result.responses.assign(inner.responses().begin(), inner.responses().end());
  return result;
}

Status Leadership::Resign() {
  if (!leads()) return Status();
  Status revoked = client_.RevokeLease(lease_);
  Lost();
  return revoked;
}

void Leadership::Lost() {
  lease_ = 0;
  create_revision_ = 0;
  may_act_until_ = {};
}

}  // namespace ddprun::etcd
