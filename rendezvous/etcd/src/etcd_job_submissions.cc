// EtcdJobSubmissions; see etcd_job_submissions.h.
#include "ddprun/etcd/etcd_job_submissions.h"

#include <vector>

#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/etcd/etcd_layout.h"
#include "etcd_txn.h"

namespace ddprun::etcd {
namespace {

// A hold that keeps losing its compare to other holds of the job gives up after this many tries
// (each loss means another hold went through).
constexpr int kMaxHoldAttempts = 64;

// The key that holds of one job serialize on.
std::string GuardKey(const std::string& prefix, const std::string& job_id) {
  return JobKeysPrefix(prefix, job_id) + "submission";
}

// ALREADY_EXISTS when a part in `parts` is another submission's.
Status RefuseOtherSubmissions(const std::string& job_id, const std::string& submission,
                              const RangeRead& parts) {
  for (const KeyValue& part : parts.kvs) {
    if (part.value == submission) continue;
    const std::string holder = part.key.substr(part.key.rfind('/') + 1);
    return Status(StatusCode::kAlreadyExists,
                  "job " + job_id + " runs already, submitted by another ddprun (at " + holder +
                      "); give this one another --rdzv_id");
  }
  return Status();
}

}  // namespace

EtcdJobSubmissions::EtcdJobSubmissions(EtcdClient& client, JobSubmissionsSettings settings)
    : client_(client), settings_(std::move(settings)) {
  renewer_ = std::thread([this] { RenewUntilStopped(); });
}

EtcdJobSubmissions::~EtcdJobSubmissions() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_changed_.notify_all();
  renewer_.join();
}

std::string EtcdJobSubmissions::PartsPrefix(const std::string& job_id) const {
  return JobKeysPrefix(settings_.prefix, job_id) + "parts/";
}

Status EtcdJobSubmissions::Check(const std::string& job_id, const std::string& submission) {
  ASSIGN_OR_RETURN(RangeRead parts, client_.GetPrefix(PartsPrefix(job_id)));
  return RefuseOtherSubmissions(job_id, submission, parts);
}

Status EtcdJobSubmissions::Hold(const std::string& job_id, const std::string& submission) {
  {
    // One part of a job per daemon, reserved here before etcd is asked: a second would share (and
    // its end delete) the first's record.
    std::lock_guard lock(mu_);
    if (!held_.emplace(job_id, submission).second) {
      return Status(StatusCode::kAlreadyExists, "job " + job_id + " runs here already");
    }
  }
  Status recorded = Record(job_id, submission);
  if (!recorded.ok()) {
    std::lock_guard lock(mu_);
    held_.erase(job_id);
  }
  return recorded;
}

Status EtcdJobSubmissions::Record(const std::string& job_id, const std::string& submission) {
  ASSIGN_OR_RETURN(int64_t lease, Lease());
  const std::string guard_key = GuardKey(settings_.prefix, job_id);
  for (int attempt = 0; attempt < kMaxHoldAttempts; ++attempt) {
    // The guard first: a hold that lands between the two reads changes it, and this one's
    // compare then fails.
    ASSIGN_OR_RETURN(auto guard, client_.Get(guard_key));
    ASSIGN_OR_RETURN(RangeRead parts, client_.GetPrefix(PartsPrefix(job_id)));
    RETURN_IF_ERROR(RefuseOtherSubmissions(job_id, submission, parts));
    etcdserverpb::TxnRequest txn;
    CompareUnchanged(txn, guard_key, guard);
    AddPut(txn, guard_key, submission);
    AddPut(txn, PartsPrefix(job_id) + settings_.holder, submission, lease);
    ASSIGN_OR_RETURN(TxnOutcome outcome, client_.Txn(txn));
    if (outcome.succeeded) return Status();
  }
  return Status(StatusCode::kAborted, "recording job " + job_id + " in etcd lost to other starts " +
                                          std::to_string(kMaxHoldAttempts) + " times in a row");
}

void EtcdJobSubmissions::LetGo(const std::string& job_id) {
  {
    std::lock_guard lock(mu_);
    if (held_.erase(job_id) == 0) return;
  }
  etcdserverpb::TxnRequest txn;
  AddDelete(txn, PartsPrefix(job_id) + settings_.holder);
  if (auto deleted = client_.Txn(txn); !deleted.ok()) {
    GetLogger("daemon")->warn(
        "job {} ended, but etcd did not hear it: {}; its record goes with "
        "this daemon's lease",
        job_id, deleted.status().message());
  }
}

Result<int64_t> EtcdJobSubmissions::Lease() {
  std::lock_guard lock(mu_);
  if (lease_ != 0) return lease_;
  ASSIGN_OR_RETURN(lease_, client_.GrantLease(settings_.ttl));
  return lease_;
}

void EtcdJobSubmissions::RenewUntilStopped() {
  std::unique_lock lock(mu_);
  while (!stop_changed_.wait_for(lock, settings_.ttl / 3, [this] { return stopping_; })) {
    const int64_t lease = lease_;
    if (lease == 0) continue;
    lock.unlock();
    auto renewed = client_.KeepLeaseAlive(lease);
    lock.lock();
    if (renewed.ok() || renewed.status().code() != StatusCode::kFailedPrecondition) continue;
    // The lease ran out (etcd was out of reach longer than its TTL): the parts went with it.
    // Recorded again on a new one, unless another submission took a job id meanwhile.
    lease_ = 0;
    std::map<std::string, std::string> held;
    held.swap(held_);  // each held again below, as a new part
    lock.unlock();
    for (const auto& [job_id, submission] : held) {
      if (Status again = Hold(job_id, submission); !again.ok()) {
        GetLogger("daemon")->error(
            "job {}: its record in etcd was lost and cannot be made again: {}", job_id,
            again.message());
      }
    }
    lock.lock();
  }
}

}  // namespace ddprun::etcd
