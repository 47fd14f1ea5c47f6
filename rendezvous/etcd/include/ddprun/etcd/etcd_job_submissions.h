// EtcdJobSubmissions: one job per job id among the daemons on one etcd (docs/control_plane.md,
// invariant 7). A submitter names its run (StartJobRequest.submission_id: one per `ddprun
// --hosts`, spares included); each daemon that runs a part of a job records it at
// "<prefix>jobs/<job>/parts/<holder>" = that submission, on a lease of the daemon's own that a
// thread renews. A part of another submission refuses the job id: two submissions of one id at
// once, at any daemons, give one job. A part goes when the daemon's agent for it ends (LetGo), or
// with the daemon (its lease runs out).
//
// Holds of one job serialize on "<prefix>jobs/<job>/submission": each hold's transaction
// compares that key with what it read before the parts and rewrites it, so of two holds that saw
// no part, one fails its compare, reads again and sees the other's part. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "ddprun/base/status.h"
#include "ddprun/etcd/etcd_client.h"

namespace ddprun::etcd {

struct JobSubmissionsSettings {
  std::string prefix = "/ddprun/";  // ends with '/'
  std::string holder;               // who this daemon is: unique among the daemons
  // How long a dead daemon's parts outlive it; renewed every third of it.
  std::chrono::seconds ttl{10};
};

class EtcdJobSubmissions {
 public:
  // `client` must outlive this.
  EtcdJobSubmissions(EtcdClient& client, JobSubmissionsSettings settings);
  ~EtcdJobSubmissions();  // stops renewing: the parts still held run out with the lease
  EtcdJobSubmissions(const EtcdJobSubmissions&) = delete;
  EtcdJobSubmissions& operator=(const EtcdJobSubmissions&) = delete;

  // OK when no daemon runs a part of job `job_id` for a submission other than `submission`;
  // ALREADY_EXISTS when one does; UNAVAILABLE when etcd cannot say.
  Status Check(const std::string& job_id, const std::string& submission);
  // Check, and this daemon's part recorded, as one step that another hold cannot split.
  // ALREADY_EXISTS too while this daemon holds a part of the job: one part per daemon.
  Status Hold(const std::string& job_id, const std::string& submission);
  // This daemon's part of `job_id` has ended. Failures are logged: the lease takes the part then.
  void LetGo(const std::string& job_id);

 private:
  std::string PartsPrefix(const std::string& job_id) const;
  // Hold's part in etcd, once reserved in held_.
  Status Record(const std::string& job_id, const std::string& submission);
  // This daemon's lease, granted at the first hold (the error when etcd cannot grant it).
  Result<int64_t> Lease();
  void RenewUntilStopped();

  EtcdClient& client_;
  const JobSubmissionsSettings settings_;
  std::mutex mu_;
  std::condition_variable stop_changed_;
  bool stopping_ = false;
  int64_t lease_ = 0;                        // 0: none yet, or it ran out
  std::map<std::string, std::string> held_;  // job id -> submission, of the parts held here
  std::thread renewer_;
};

}  // namespace ddprun::etcd
