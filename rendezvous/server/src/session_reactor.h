// RendezvousService::SessionReactor: one agent's Session stream. Reads the agent's messages one
// at a time and hands them to the service; writes the events pushed to it in order, one write in
// flight at a time. Push may be called from any thread until the reactor is unregistered.
#pragma once

#include <deque>
#include <optional>

#include "ddprun/base/thread_annotations.h"
#include "rendezvous_service.h"

namespace ddprun {

class RendezvousService::SessionReactor final
    : public grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerEvent> {
 public:
  // `refusal` set: the stream is finished at once with it (for example UNAUTHENTICATED).
  SessionReactor(RendezvousService& service, grpc::CallbackServerContext* context,
                 std::optional<grpc::Status> refusal);

  // Queues an event for the agent.
  void Push(v1::ServerEvent event);
  // Ends the stream with `status` once queued events are written; `led_elsewhere`: tells the
  // agent so (kLedElsewhereMetadataKey), for it to try its next server, or `leader_address`
  // when the leader advertised one (kLeaderAddressMetadataKey).
  void End(grpc::Status status, bool led_elsewhere = false, std::string leader_address = "");

  // Set by the service on the session's first join; read by the service only.
  std::optional<SessionKey> key;
  // The service told this session's node it was declared lost, and the node has not joined
  // since: its later heartbeats get no second notice. Read and set by the service only.
  bool told_lost = false;

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnDone() override;

 private:
  // Reads the next message once `applied` (the last one's outcome) is OK; else ends the stream.
  void ReadNextAfter(const grpc::Status& applied);
  void WriteNextLocked() REQUIRES(mu_);
  void MaybeFinishLocked() REQUIRES(mu_);

  RendezvousService& service_;
  grpc::CallbackServerContext* const context_;
  v1::AgentMessage incoming_;
  ddprun::Mutex mu_;
  std::deque<v1::ServerEvent> outgoing_ GUARDED_BY(mu_);  // front is being written when writing_
  bool writing_ GUARDED_BY(mu_) = false;
  std::optional<grpc::Status> ending_ GUARDED_BY(mu_);
  bool led_elsewhere_ GUARDED_BY(mu_) = false;
  std::string leader_address_ GUARDED_BY(mu_);
  bool finished_ GUARDED_BY(mu_) = false;
};

}  // namespace ddprun
