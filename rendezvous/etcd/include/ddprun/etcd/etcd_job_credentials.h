// EtcdJobCredentials: SharedCredentials (shared_credentials.h) in etcd, at
// "<prefix>jobs/<job>/credential". A check reads the key once and keeps the answer for
// `cache_for`, so a job's store calls cost etcd no extra read each; so a revoked credential may
// open the job's keys at a daemon that does not lead the job for that long after the job ended.
// A check that fails is asked of etcd again at most every `recheck_after`, so wrong credentials
// cannot turn each call into an etcd read. Thread-safe.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "ddprun/base/steady_time_source.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/etcd/etcd_client.h"
#include "ddprun/rendezvous/shared_credentials.h"

namespace ddprun::etcd {

struct JobCredentialsSettings {
  std::string prefix = "/ddprun/";  // ends with '/'
  std::chrono::milliseconds cache_for{1'000};
  std::chrono::milliseconds recheck_after{100};
  size_t max_cached_jobs = 4'096;  // past it, the cache starts again empty
};

class EtcdJobCredentials final : public SharedCredentials {
 public:
  // `client` and `time` must outlive this.
  EtcdJobCredentials(EtcdClient& client, JobCredentialsSettings settings,
                     const SteadyTimeSource& time = SteadyTimeSource::Real());

  Result<std::string> Establish(const std::string& job_id, const std::string& candidate) override;
  void Revoke(const std::string& job_id) override;
  bool Accepts(const std::string& job_id, std::string_view presented) override EXCLUDES(mu_);

  std::string KeyOf(const std::string& job_id) const;

 private:
  struct Cached {
    std::string secret;  // empty: none recorded
    SteadyTimeSource::TimePoint read_at;
  };

  EtcdClient& client_;
  const JobCredentialsSettings settings_;
  const SteadyTimeSource& time_;
  Mutex mu_;
  std::map<std::string, Cached> cache_ GUARDED_BY(mu_);
};

}  // namespace ddprun::etcd
