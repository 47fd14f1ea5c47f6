// hello_store: a multi-worker job that uses the rendezvous store the way real training code does
// to agree on something before it starts. Run it with
//   ddprun --standalone --nproc_per_node=4 build/bin/hello_store
// Every rank announces itself (add), rank 0 publishes a value (set), every rank waits for all
// ranks and for that value (wait), then reads it (get) and prints one line.
#include <chrono>
#include <cstdio>

#include "ddp/environment.h"
#include "ddprun/rendezvous/store_client.h"

namespace {

int Fail(const char* what, const ddprun::Status& status) {
  std::fprintf(stderr, "hello_store: %s: %s\n", what, status.ToString().c_str());
  return 1;
}

}  // namespace

int main() {
  auto env = ddp::Environment::FromProcess();
  if (!env.ok()) return Fail("reading the environment", env.status());
  auto store = ddprun::StoreClient::FromEnvironment();
  if (!store.ok()) return Fail("connecting to the store", store.status());
  auto& client = *store.value();
  const auto timeout = std::chrono::seconds(60);

  if (env->rank == 0) {
    const std::string greeting = "hello from rank 0 of run " + env->job_id;
    if (auto s = client.Set("greeting", greeting); !s.ok()) return Fail("set", s);
  }
  auto arrived = client.Add("arrived", 1);
  if (!arrived.ok()) return Fail("add", arrived.status());
  if (arrived.value() == env->world_size) {
    if (auto s = client.Set("everyone_arrived", "1"); !s.ok()) return Fail("set", s);
  }
  if (auto s = client.Wait({"greeting", "everyone_arrived"}, timeout); !s.ok()) {
    return Fail("wait", s);
  }
  auto greeting = client.Get("greeting");
  if (!greeting.ok()) return Fail("get", greeting.status());
  std::printf("rank %d of %d (local rank %d, restart %d): %s; all %d ranks arrived\n", env->rank,
              env->world_size, env->local_rank, env->restart_count, greeting->c_str(),
              env->world_size);
  return 0;
}
