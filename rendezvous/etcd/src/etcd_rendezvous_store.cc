// OpenEtcdRendezvousStore; see etcd_rendezvous_store.h.
#include "ddprun/etcd/etcd_rendezvous_store.h"

#include <cinttypes>
#include <cstdio>

#include "ddprun/base/logging.h"

namespace ddprun::etcd {

Result<EtcdRendezvousStore> OpenEtcdRendezvousStore(EtcdSettings settings,
                                                    const std::string& prefix,
                                                    const std::string& holder,
                                                    EtcdJobStore::WatchScope watch_scope) {
  auto client = EtcdClient::Open(std::move(settings));
  if (!client.ok()) return client.status();
  auto member = client.value()->MemberStatus();
  if (!member.ok()) {
    return Status(member.status().code(),
                  "etcd: " + member.status().message() + "; start the members first");
  }
  GetLogger("rendezvous")
      ->info("the jobs' store is in etcd, under {}, served by {}", prefix,
             member.value().description);
  EtcdRendezvousStore store;
  char cluster[17];
  std::snprintf(cluster, sizeof(cluster), "%016" PRIx64, member.value().cluster_id);
  store.description = "etcd cluster " + std::string(cluster) + " " + prefix;
  store.client = std::move(client).value();
  store.jobs = std::make_unique<EtcdJobStore>(*store.client, prefix, KeyValueLimits{}, watch_scope);
  store.leadership = std::make_unique<EtcdJobLeadership>(
      *store.client, JobLeadershipSettings{.prefix = prefix, .holder = holder});
  store.credentials =
      std::make_unique<EtcdJobCredentials>(*store.client, JobCredentialsSettings{.prefix = prefix});
  return store;
}

}  // namespace ddprun::etcd
