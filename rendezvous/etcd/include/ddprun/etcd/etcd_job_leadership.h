// EtcdJobLeadership: JobLeadership (job_leadership.h) over etcd: one Leadership (leadership.h)
// per claimed job, at "<prefix>jobs/<job>/leader", renewed every third of its lease by a thread
// of its own; the job's record at "<prefix>jobs/<job>/state", written through the lead's fence. A
// renewal that fails, or a clock past what the last renewal allows, reports the job lost, before
// etcd can give the key to another server. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "ddprun/etcd/etcd_client.h"
#include "ddprun/etcd/leadership.h"
#include "ddprun/rendezvous/job_leadership.h"

namespace ddprun::etcd {

struct JobLeadershipSettings {
  std::string prefix = "/ddprun/";  // ends with '/'
  std::string holder;               // who this server is, in the key's value and in messages
  // A dead leader's jobs wait this long, at most, for another server; etcd rounds it up to its
  // own minimum (about 1.5 times its election timeout).
  std::chrono::seconds ttl{2};
  std::chrono::milliseconds margin{500};
};

class EtcdJobLeadership final : public JobLeadership {
 public:
  // `client` must outlive this.
  EtcdJobLeadership(EtcdClient& client, JobLeadershipSettings settings);
  ~EtcdJobLeadership() override;  // stops renewing; the leases run out by themselves
  EtcdJobLeadership(const EtcdJobLeadership&) = delete;
  EtcdJobLeadership& operator=(const EtcdJobLeadership&) = delete;

  bool Leads(const std::string& job_id) const override;
  Status Claim(const std::string& job_id) override;
  void Release(const std::string& job_id) override;
  void SetLostCallback(std::function<void(const std::string& job_id)> on_lost) override;
  std::string LeaderAddress(const std::string& job_id) override;
  void Forget(const std::string& job_id) override;
  // At "<prefix>jobs/<job>/state", in a transaction fenced by the job's leader key.
  Status Record(const std::string& job_id, const std::string& record, bool ended) override;
  Result<std::optional<std::string>> Recorded(const std::string& job_id) override;

  // From now on, the leader keys this server writes say that its agents reach it at `address`
  // ("ip:port"): servers whose agents do not list every server (--rdzv_backend=etcd-v3) send
  // them there. Call it before the first Claim. The key's value is the holder, and the address
  // on a second line.
  void Advertise(const std::string& address);

  // "<prefix>jobs/<job>/leader", the job id escaped as the store's keys are.
  std::string KeyOf(const std::string& job_id) const;
  // "<prefix>jobs/<job>/state": the job's record.
  std::string RecordKeyOf(const std::string& job_id) const;

 private:
  void RenewUntilStopped();
  // What this server's leader keys hold: the holder, and the advertised address if any.
  std::string KeyValueLocked() const;

  EtcdClient& client_;
  const JobLeadershipSettings settings_;
  mutable std::mutex mu_;  // Leadership is not thread-safe: each is used under mu_ only
  std::condition_variable stop_changed_;
  bool stopping_ = false;
  std::string advertised_;  // under mu_
  // Where the leader of each job another server led at its last Claim here takes sessions, as
  // its key said ("" when it advertised none); under mu_.
  std::map<std::string, std::string> leader_addresses_;
  std::map<std::string, std::unique_ptr<Leadership>> led_;  // the jobs this server leads
  // Held while on_lost_ runs, so that SetLostCallback(nullptr) returns only once no call of the
  // old callback is running. Taken before mu_.
  std::mutex callback_mu_;
  std::function<void(const std::string&)> on_lost_;
  std::thread renewer_;
};

}  // namespace ddprun::etcd
