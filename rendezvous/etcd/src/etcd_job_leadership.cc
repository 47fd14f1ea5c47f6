// EtcdJobLeadership; see etcd_job_leadership.h.
#include "ddprun/etcd/etcd_job_leadership.h"

#include <algorithm>
#include <vector>

#include "ddprun/base/logging.h"
#include "ddprun/etcd/etcd_layout.h"
#include "etcd_txn.h"

namespace ddprun::etcd {
namespace {

// How long a claim waits for etcd to say who leads a job. Far above an answer's time; far below
// the grace that the nodes coming back to a new leader have after the first (JobRounds).
constexpr std::chrono::milliseconds kClaimReadTimeout{300};
// Jobs whose leader's address a server remembers at most (one per job it was asked to claim
// while another led it); past it, it starts again empty.
constexpr size_t kMostLeaderAddresses = 4'096;

}  // namespace

EtcdJobLeadership::EtcdJobLeadership(EtcdClient& client, JobLeadershipSettings settings)
    : client_(client), settings_(std::move(settings)) {
  renewer_ = std::thread([this] { RenewUntilStopped(); });
}

EtcdJobLeadership::~EtcdJobLeadership() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_changed_.notify_all();
  renewer_.join();
}

std::string EtcdJobLeadership::KeyOf(const std::string& job_id) const {
  return JobKeysPrefix(settings_.prefix, job_id) + "leader";
}

bool EtcdJobLeadership::Leads(const std::string& job_id) const {
  std::lock_guard lock(mu_);
  auto led = led_.find(job_id);
  return led != led_.end() && led->second->MayAct();
}

Status EtcdJobLeadership::Claim(const std::string& job_id) {
  std::lock_guard lock(mu_);
  if (auto led = led_.find(job_id); led != led_.end() && led->second->MayAct()) return Status();
  const std::string key = KeyOf(job_id);
  // One read first: while another server leads, asking costs no lease. A daemon cut off from
  // etcd says so soon, so that the agent asking moves on to another daemon.
  auto holder = client_.Get(key, kClaimReadTimeout);
  if (!holder.ok()) {
    return UnavailableError("cannot reach etcd to lead job '" + job_id +
                            "': " + holder.status().message());
  }
  const std::string value = KeyValueLocked();
  if (holder->has_value() && (*holder)->value != value) {
    const std::string& other = (*holder)->value;
    const size_t line_end = other.find('\n');
    if (leader_addresses_.size() >= kMostLeaderAddresses) leader_addresses_.clear();
    leader_addresses_[job_id] = line_end == std::string::npos ? "" : other.substr(line_end + 1);
    return UnavailableError("job '" + job_id + "' is led by another server (" +
                            other.substr(0, line_end) +
                            "); its agents reach it at another endpoint");
  }
  auto leadership = std::make_unique<Leadership>(
      client_, LeadershipSettings{key, value, settings_.ttl, settings_.margin});
  auto took = leadership->Step();
  if (!took.ok()) {
    return UnavailableError("cannot reach etcd to lead job '" + job_id +
                            "': " + took.status().message());
  }
  if (!*took) {
    return UnavailableError("job '" + job_id +
                            "' is led by another server; its agents reach it at another endpoint");
  }
  GetLogger("rendezvous")->info("this server ({}) leads job '{}'", settings_.holder, job_id);
  led_[job_id] = std::move(leadership);
  leader_addresses_.erase(job_id);
  return Status();
}

std::string EtcdJobLeadership::LeaderAddress(const std::string& job_id) {
  std::lock_guard lock(mu_);
  auto address = leader_addresses_.find(job_id);
  return address == leader_addresses_.end() ? "" : address->second;
}

void EtcdJobLeadership::Advertise(const std::string& address) {
  std::lock_guard lock(mu_);
  advertised_ = address;
}

std::string EtcdJobLeadership::KeyValueLocked() const {
  return advertised_.empty() ? settings_.holder : settings_.holder + "\n" + advertised_;
}

std::string EtcdJobLeadership::RecordKeyOf(const std::string& job_id) const {
  return JobKeysPrefix(settings_.prefix, job_id) + "state";
}

Status EtcdJobLeadership::Record(const std::string& job_id, const std::string& record, bool ended) {
  std::lock_guard lock(mu_);
  auto led = led_.find(job_id);
  if (led == led_.end()) {
    return FailedPreconditionError("this server does not lead job '" + job_id + "'");
  }
  int64_t lease = 0;  // a running job's record stays until the job is forgotten
  if (ended) {
    auto granted =
        client_.GrantLease(std::chrono::duration_cast<std::chrono::seconds>(kEndedRecordRetention));
    if (!granted.ok()) return granted.status();
    lease = granted.value();
  }
  etcdserverpb::TxnRequest put;
  AddPut(put, RecordKeyOf(job_id), record, lease);
  return led->second->FencedTxn(put).status();
}

Result<std::optional<std::string>> EtcdJobLeadership::Recorded(const std::string& job_id) {
  auto read = client_.Get(RecordKeyOf(job_id), kClaimReadTimeout);
  if (!read.ok()) return read.status();
  if (!read->has_value()) return std::optional<std::string>();
  return std::optional<std::string>((*read)->value);
}

void EtcdJobLeadership::Forget(const std::string& job_id) {
  {
    std::lock_guard lock(mu_);
    if (auto led = led_.find(job_id); led != led_.end()) {
      etcdserverpb::TxnRequest remove;
      AddDelete(remove, RecordKeyOf(job_id));
      if (auto removed = led->second->FencedTxn(remove); !removed.ok()) {
        GetLogger("rendezvous")
            ->warn("the record of ended job '{}' stays in etcd: {}", job_id,
                   removed.status().message());
      }
    }
  }
  Release(job_id);
}

void EtcdJobLeadership::Release(const std::string& job_id) {
  std::lock_guard lock(mu_);
  auto led = led_.find(job_id);
  if (led == led_.end()) return;
  if (Status resigned = led->second->Resign(); !resigned.ok()) {
    GetLogger("rendezvous")
        ->warn("giving up job '{}': {}; its lease runs out by itself", job_id, resigned.message());
  }
  led_.erase(led);
}

void EtcdJobLeadership::SetLostCallback(std::function<void(const std::string&)> on_lost) {
  std::lock_guard calling(callback_mu_);
  std::lock_guard lock(mu_);
  on_lost_ = std::move(on_lost);
}

void EtcdJobLeadership::RenewUntilStopped() {
  const auto period = std::chrono::duration_cast<std::chrono::milliseconds>(settings_.ttl) / 3;
  std::unique_lock lock(mu_);
  while (true) {
    // Every third of the lease, and when a lead would run out by the clock (its renewals failed):
    // a lead that is over is reported at once.
    auto wake_at = std::chrono::steady_clock::now() + period;
    for (const auto& [job_id, leadership] : led_) {
      wake_at = std::min(wake_at, leadership->may_act_until());
    }
    if (stop_changed_.wait_until(lock, wake_at, [this] { return stopping_; })) return;
    std::vector<std::string> lost;
    for (auto led = led_.begin(); led != led_.end();) {
      auto renewed = led->second->Step();
      if (!renewed.ok()) {
        GetLogger("rendezvous")
            ->warn("cannot renew the lead of job '{}': {}", led->first, renewed.status().message());
      }
      // An error leaves the lead in place until the clock says it may have run out.
      if (led->second->MayAct()) {
        ++led;
        continue;
      }
      GetLogger("rendezvous")->warn("this server no longer leads job '{}'", led->first);
      lost.push_back(led->first);
      led = led_.erase(led);
    }
    if (lost.empty()) continue;
    lock.unlock();  // the callback may call Leads; callback_mu_ comes before mu_
    {
      std::lock_guard calling(callback_mu_);
      std::function<void(const std::string&)> on_lost;
      {
        std::lock_guard reading(mu_);
        on_lost = on_lost_;
      }
      if (on_lost) {
        for (const std::string& job_id : lost) on_lost(job_id);
      }
    }
    lock.lock();
  }
}

}  // namespace ddprun::etcd
