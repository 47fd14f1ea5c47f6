// Leadership: one holder's claim to act for a job (or anything else named by a key), held in
// etcd. The holder leads while `key` exists with the create revision its own transaction wrote,
// attached to its lease; the lease dies with the holder (or with its link to etcd), and the key
// with the lease, so another holder can take over. Two rules make "at most one acts" hold:
//
// - A leader acts only while MayAct(): it led at its last renewal, and by its own clock the lease
//   cannot have run out yet (the renewal was sent at t, so etcd keeps the lease until at least
//   t + TTL; MayAct ends `margin` before that). A leader cut off from etcd stops acting before
//   etcd can give the key to another.
// - Every write a leader makes goes through FencedTxn: a transaction that applies only while the
//   key still has the leader's create revision. A deposed leader's write fails in etcd, whatever
//   its clock says.
//
// Not thread-safe: one owner thread calls Step (about every TTL/3), MayAct and FencedTxn.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "ddprun/base/status.h"
#include "ddprun/base/steady_time_source.h"
#include "ddprun/etcd/etcd_client.h"

namespace ddprun::etcd {

struct LeadershipSettings {
  std::string key;     // "<prefix>jobs/<job>/leader"
  std::string holder;  // the value while this holder leads: who it is, where agents find it
  std::chrono::seconds ttl{5};
  std::chrono::milliseconds margin{500};  // MayAct ends this long before the lease could
};

class Leadership {
 public:
  Leadership(EtcdClient& client, LeadershipSettings settings,
             const SteadyTimeSource& time = SteadyTimeSource::Real());

  // One step: when not leading, tries to take the key on a new lease; when leading, renews the
  // lease. Whether this holder leads afterwards. An error (etcd unreachable) changes nothing:
  // MayAct runs out by the clock.
  Result<bool> Step();

  bool leads() const { return create_revision_ != 0; }
  bool MayAct() const;
  // When MayAct() runs out by the clock, unless a renewal comes first.
  SteadyTimeSource::TimePoint may_act_until() const { return may_act_until_; }

  // `txn`, applied only while this holder leads; its outcome. FAILED_PRECONDITION, and nothing
  // applied, when MayAct() is false or when etcd says the key is no longer this holder's (it
  // then leads no more).
  Result<TxnOutcome> FencedTxn(const etcdserverpb::TxnRequest& txn);

  // Gives the key up now: revokes the lease, which deletes the key.
  Status Resign();

  // The create revision of the key while this holder leads; 0 when it does not.
  int64_t create_revision() const { return create_revision_; }

 private:
  void Lost();

  EtcdClient& client_;
  LeadershipSettings settings_;
  const SteadyTimeSource& time_;
  int64_t lease_ = 0;
  int64_t create_revision_ = 0;
  SteadyTimeSource::TimePoint may_act_until_{};
};

// A transaction that puts `key` = `value` (on `lease`, 0 for none) only if `key` does not exist.
etcdserverpb::TxnRequest CreateIfAbsent(const std::string& key, const std::string& value,
                                        int64_t lease = 0);

}  // namespace ddprun::etcd
