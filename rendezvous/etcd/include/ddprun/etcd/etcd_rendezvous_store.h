// EtcdRendezvousStore: what a rendezvous server needs to keep its jobs in etcd, opened together:
// a client of the cluster that has answered once (a server that cannot reach its etcd never
// starts), the jobs' store keys, which server leads each job, and the jobs' store credentials.
// ddprund --store=etcd and an agent with --rdzv_backend=etcd-v3 open one each.
#pragma once

#include <memory>
#include <string>

#include "ddprun/base/status.h"
#include "ddprun/etcd/etcd_client.h"
#include "ddprun/etcd/etcd_job_credentials.h"
#include "ddprun/etcd/etcd_job_leadership.h"
#include "ddprun/etcd/etcd_job_store.h"

namespace ddprun::etcd {

struct EtcdRendezvousStore {
  std::unique_ptr<EtcdClient> client;
  std::unique_ptr<EtcdJobStore> jobs;
  std::unique_ptr<EtcdJobLeadership> leadership;
  std::unique_ptr<EtcdJobCredentials> credentials;
  // "etcd cluster <id> <prefix>": names this store, the same for every server on it.
  std::string description;
};

// Opens `settings`' cluster under `prefix`, leading jobs as `holder` (unique among the servers
// while it lives), its store's waits watching as `watch_scope` says (EtcdJobStore).
// UNAVAILABLE naming the members when none answers.
Result<EtcdRendezvousStore> OpenEtcdRendezvousStore(EtcdSettings settings,
                                                    const std::string& prefix,
                                                    const std::string& holder,
                                                    EtcdJobStore::WatchScope watch_scope);

}  // namespace ddprun::etcd
