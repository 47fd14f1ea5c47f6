// RendezvousStore: ddp::Store over the rendezvous server's key-value store (gRPC, through
// ddprun::StoreClient), scoped to one job and round. What ProcessGroup::Create connects; the
// runtime's only use of the rendezvous client, kept out of its public headers.
#pragma once

#include <memory>

#include "ddp/store.h"
#include "ddprun/rendezvous/store_client.h"

namespace ddp {

class RendezvousStore final : public Store {
 public:
  explicit RendezvousStore(const ddprun::StoreClientOptions& options)
      : client_(ddprun::StoreClient::Connect(options)) {}

  ddprun::Status Set(const std::string& key, const std::string& value) override {
    return client_->Set(key, value);
  }
  ddprun::Result<std::string> Get(const std::string& key) override { return client_->Get(key); }
  ddprun::Status Wait(const std::vector<std::string>& keys,
                      std::chrono::milliseconds timeout) override {
    return client_->Wait(keys, timeout);
  }
  ddprun::Result<int64_t> Add(const std::string& key, int64_t delta) override {
    return client_->Add(key, delta);
  }
  ddprun::Result<bool> Delete(const std::string& key) override { return client_->Delete(key); }

 private:
  std::unique_ptr<ddprun::StoreClient> client_;
};

}  // namespace ddp
