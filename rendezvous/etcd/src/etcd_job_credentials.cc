// EtcdJobCredentials; see etcd_job_credentials.h.
#include "ddprun/etcd/etcd_job_credentials.h"

#include "ddprun/base/logging.h"
#include "ddprun/base/secret_token.h"
#include "ddprun/etcd/etcd_layout.h"
#include "ddprun/etcd/leadership.h"
#include "etcd_txn.h"

namespace ddprun::etcd {
namespace {

namespace pb = etcdserverpb;

// How long a check waits for etcd: a store call waits for it, and a daemon cut off from etcd
// must refuse soon, so the worker tries the next daemon.
constexpr std::chrono::milliseconds kReadTimeout{300};

}  // namespace

EtcdJobCredentials::EtcdJobCredentials(EtcdClient& client, JobCredentialsSettings settings,
                                       const SteadyTimeSource& time)
    : client_(client), settings_(std::move(settings)), time_(time) {}

std::string EtcdJobCredentials::KeyOf(const std::string& job_id) const {
  return JobKeysPrefix(settings_.prefix, job_id) + "credential";
}

Result<std::string> EtcdJobCredentials::Establish(const std::string& job_id,
                                                  const std::string& candidate) {
  const std::string key = KeyOf(job_id);
  // Created when absent; else the transaction reads what is there, in one step.
  pb::TxnRequest txn = CreateIfAbsent(key, candidate);
  txn.add_failure()->mutable_request_range()->set_key(key);
  auto outcome = client_.Txn(txn);
  if (!outcome.ok()) return outcome.status();
  if (outcome->succeeded) return candidate;
  const auto& kvs = outcome->responses.at(0).response_range().kvs();
  if (kvs.empty()) {
    // Revoked between the compare and the read cannot happen in one transaction; a reply
    // without the key is etcd's fault, and the job must not start without a credential.
    return UnavailableError("etcd answered no credential for job '" + job_id + "'");
  }
  return kvs.at(0).value();
}

void EtcdJobCredentials::Revoke(const std::string& job_id) {
  pb::TxnRequest txn;  // no compares: the delete of exactly that key
  AddDelete(txn, KeyOf(job_id));
  if (auto deleted = client_.Txn(txn); !deleted.ok()) {
    GetLogger("rendezvous")
        ->warn(
            "the store credential of ended job '{}' stays in etcd until the job is forgotten: "
            "{}",
            job_id, deleted.status().message());
  }
  MutexLock lock(mu_);
  cache_.erase(job_id);
}

bool EtcdJobCredentials::Accepts(const std::string& job_id, std::string_view presented) {
  const auto now = time_.Now();
  {
    MutexLock lock(mu_);
    auto cached = cache_.find(job_id);
    if (cached != cache_.end() && now - cached->second.read_at < settings_.cache_for) {
      const bool accepted =
          !cached->second.secret.empty() && SecretsEqual(presented, cached->second.secret);
      if (accepted || now - cached->second.read_at < settings_.recheck_after) return accepted;
    }
  }
  auto read = client_.Get(KeyOf(job_id), kReadTimeout);
  if (!read.ok()) {
    GetLogger("rendezvous")
        ->warn("cannot check a store credential of job '{}' in etcd: {}", job_id.substr(0, 64),
               read.status().message());
    return false;
  }
  std::string secret = read.value() ? read.value()->value : std::string();
  const bool accepted = !secret.empty() && SecretsEqual(presented, secret);
  MutexLock lock(mu_);
  if (cache_.size() >= settings_.max_cached_jobs) cache_.clear();
  cache_[job_id] = Cached{std::move(secret), now};
  return accepted;
}

}  // namespace ddprun::etcd
