// Session streams: the reactor, and the service's side of them (routing, the round timer).
#include "session_reactor.h"

#include <boost/asio/post.hpp>

#include "ddprun/base/logging.h"
#include "ddprun/rendezvous/grpc_status.h"
#include "ddprun/rendezvous/proto_conversions.h"

namespace ddprun {

RendezvousService::SessionReactor::SessionReactor(RendezvousService& service,
                                                  grpc::CallbackServerContext* context,
                                                  std::optional<grpc::Status> refusal)
    : service_(service), context_(context) {
  if (refusal) {
    service_.CountSessionEnd(*refusal);
    Finish(*refusal);
    finished_ = true;
    return;
  }
  StartRead(&incoming_);
}

void RendezvousService::SessionReactor::Push(v1::ServerEvent event) {
  MutexLock lock(mu_);
  if (finished_ || ending_) return;
  outgoing_.push_back(std::move(event));
  if (!writing_) WriteNextLocked();
}

void RendezvousService::SessionReactor::End(grpc::Status status, bool led_elsewhere,
                                            std::string leader_address) {
  MutexLock lock(mu_);
  if (!ending_) {
    ending_ = std::move(status);
    led_elsewhere_ = led_elsewhere;
    leader_address_ = std::move(leader_address);
  }
  MaybeFinishLocked();
}

void RendezvousService::SessionReactor::WriteNextLocked() {
  writing_ = true;
  StartWrite(&outgoing_.front());
}

void RendezvousService::SessionReactor::MaybeFinishLocked() {
  if (finished_ || writing_ || !ending_) return;
  finished_ = true;
  if (led_elsewhere_) context_->AddTrailingMetadata(kLedElsewhereMetadataKey, "1");
  if (!leader_address_.empty()) {
    context_->AddTrailingMetadata(kLeaderAddressMetadataKey, leader_address_);
  }
  service_.CountSessionEnd(*ending_);
  Finish(*ending_);
}

void RendezvousService::SessionReactor::OnReadDone(bool ok) {
  if (!ok) {  // the agent closed its side, or the call was cancelled
    End(grpc::Status::OK);
    return;
  }
  if (service_.NeedsClaim(incoming_)) {
    // The claim waits on the shared store: off gRPC's thread, and the next read waits for it.
    service_.RunStoreCall([this] {
      const std::string& job_id = incoming_.join().job_id();
      Status claimed = service_.leadership_->Claim(job_id);
      if (claimed.ok()) {
        claimed = service_.PrepareTakeover(incoming_.join());
        // A job without its credential would refuse its own workers: the next server tries.
        if (!claimed.ok()) service_.leadership_->Release(job_id);
      }
      if (!claimed.ok()) {
        End(ToGrpcStatus(claimed), /*led_elsewhere=*/true,
            service_.leadership_->LeaderAddress(job_id));
        return;
      }
      ReadNextAfter(service_.OnAgentMessage(*this, incoming_));
    });
    return;
  }
  ReadNextAfter(service_.OnAgentMessage(*this, incoming_));
}

void RendezvousService::SessionReactor::ReadNextAfter(const grpc::Status& applied) {
  if (!applied.ok()) {
    End(applied);
    return;
  }
  StartRead(&incoming_);
}

void RendezvousService::SessionReactor::OnWriteDone(bool ok) {
  MutexLock lock(mu_);
  writing_ = false;
  outgoing_.pop_front();
  if (!ok) {  // the stream is broken; the agent will reconnect or be declared lost
    outgoing_.clear();
    if (!ending_) ending_ = grpc::Status(grpc::StatusCode::UNAVAILABLE, "write failed");
  } else if (!outgoing_.empty()) {
    WriteNextLocked();
    return;
  }
  MaybeFinishLocked();
}

void RendezvousService::SessionReactor::OnDone() {
  if (key) service_.Unregister(*key, this);
  delete this;
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerEvent>* RendezvousService::Session(
    grpc::CallbackServerContext* context) {
  grpc::Status auth = Authenticate(context);
  return new SessionReactor(*this, context, auth.ok() ? std::nullopt : std::optional(auth));
}

bool RendezvousService::NeedsClaim(const v1::AgentMessage& message) const {
  return leadership_ && message.has_join() && !leadership_->Leads(message.join().job_id());
}

void RendezvousService::AbandonJob(const std::string& job_id) {
  registry_.Abandon(job_id);
  const grpc::Status lost(grpc::StatusCode::UNAVAILABLE,
                          "this daemon no longer leads job '" + job_id +
                              "' (its lease in etcd ran out); join the job's leader");
  {
    MutexLock lock(sessions_mu_);
    for (auto it = sessions_.lower_bound({job_id, ""});
         it != sessions_.end() && it->first.first == job_id; ++it) {
      it->second->End(lost, /*led_elsewhere=*/true);
    }
  }
  NotifyChange();
}

grpc::Status RendezvousService::OnAgentMessage(SessionReactor& session,
                                               const v1::AgentMessage& message) {
  const auto now = time_.Now();
  std::vector<RoutedEvent> events;
  if (message.has_join()) {
    const auto& join = message.join();
    const NodeDescription node = FromProto(join.node());
    const SessionKey key{join.job_id(), node.node_id};
    if (session.key && *session.key != key) {
      return {grpc::StatusCode::INVALID_ARGUMENT, "a session serves one node of one job"};
    }
    if (!session.key) {
      session.key = key;
      Register(key, &session);
    }
    std::optional<RunningRound> running;
    if (join.has_running()) {
      running = FromProto(join.running());
    }
    Status joined =
        registry_.Join(join.job_id(), FromProto(join.settings()), node, running, now, events);
    if (joined.ok()) {
      session.told_lost = false;  // a member again: if it is lost again, it hears so again
    } else {
      // The ids are cut: a refused join may be refused for ids of a megabyte.
      GetLogger("rendezvous")
          ->warn("join of node {} to job '{}' refused: {}", node.host.substr(0, 64),
                 join.job_id().substr(0, 64), joined.message());
    }
    Deliver(events);
    ScheduleTick();
    return ToGrpcStatus(joined);
  }
  if (!session.key) {
    return {grpc::StatusCode::FAILED_PRECONDITION, "the first message of a session is a join"};
  }
  const auto& [job_id, node_id] = *session.key;
  switch (message.kind_case()) {
    case v1::AgentMessage::kHeartbeat: {
      std::optional<NodeProgress> progress;
      const auto& heartbeat = message.heartbeat();
      if (heartbeat.progress_size() > 0) {
        progress.emplace();
        progress->round = heartbeat.round();
        for (const auto& rank : heartbeat.progress()) progress->ranks.push_back(FromProto(rank));
      }
      if (!registry_.Heartbeat(job_id, node_id, now, progress, events).ok()) {
        // Once: heartbeats queued while the node was cut off arrive together, and each notice
        // would make the agent join again, each join restarting the round the first one formed.
        if (!session.told_lost) {
          session.told_lost = true;
          v1::ServerEvent lost;
          lost.mutable_restart()->set_reason(
              "this node was declared lost (no heartbeat in time); stop the workers and join "
              "again");
          session.Push(std::move(lost));
        }
        return grpc::Status::OK;
      }
      if (events.empty()) return grpc::Status::OK;
      break;
    }
    case v1::AgentMessage::kWorkerFailed:
      registry_.WorkerFailed(job_id, node_id, message.worker_failed().round(),
                             FromProto(message.worker_failed().failure()),
                             message.worker_failed().exit_status(), now, events);
      break;
    case v1::AgentMessage::kSucceeded:
      registry_.Succeeded(job_id, node_id, message.succeeded().round(), now, events);
      break;
    case v1::AgentMessage::kLeave:
      registry_.Leave(job_id, node_id, now, events);
      break;
    default:
      return {grpc::StatusCode::INVALID_ARGUMENT, "an empty or unknown agent message"};
  }
  Deliver(events);
  ScheduleTick();
  return grpc::Status::OK;
}

void RendezvousService::Deliver(const std::vector<RoutedEvent>& events) {
  // With a shared store, a round formed or the job's end reaches no node before it is recorded.
  const std::set<std::string> unrecorded =
      leadership_ ? RecordDecisions(events) : std::set<std::string>();
  if (!events.empty()) {
    // Converted before the lock: a round's delivery holds it only to hand each event over.
    std::vector<v1::ServerEvent> protos;
    protos.reserve(events.size());
    for (const auto& routed : events) protos.push_back(ToProto(routed.event));
    MutexLock lock(sessions_mu_);  // a session is deleted only after Unregister took it
    for (size_t i = 0; i < events.size(); ++i) {
      if (unrecorded.contains(events[i].job_id)) continue;
      auto it = sessions_.find({events[i].job_id, events[i].event.node_id});
      if (it != sessions_.end()) it->second->Push(std::move(protos[i]));
    }
  }
  if (!unrecorded.empty()) GiveUp(unrecorded);
  // Even without an event: a job with no node to tell may have ended (join timeout), and with
  // it the server's work.
  NotifyChange();
}

void RendezvousService::NotifyChange() {
  MutexLock lock(change_mu_);
  if (on_change_) on_change_();
}

void RendezvousService::Register(const SessionKey& key, SessionReactor* session) {
  MutexLock lock(sessions_mu_);
  sessions_[key] = session;  // a reconnecting agent replaces its old stream
}

void RendezvousService::Unregister(const SessionKey& key, SessionReactor* session) {
  {
    MutexLock lock(sessions_mu_);
    auto it = sessions_.find(key);
    if (it != sessions_.end() && it->second == session) {
      sessions_.erase(it);
      // The node's current stream is gone: unless it comes back soon, the node is lost. (After
      // a Leave the node is no longer in the job and this changes nothing.)
      registry_.Disconnected(key.first, key.second, time_.Now());
      ScheduleTick();
    }
  }
  NotifyChange();  // outside sessions_mu_, as Deliver calls it
}

void RendezvousService::ScheduleTick() {
  // One re-arm queued at a time: every agent message asks for one, and each reads every job's
  // deadline, so under load the timer thread would fall ever further behind (the Wait timeouts
  // it also serves with it). The flag is cleared before the deadline is read, so a change made
  // after that read queues a re-arm of its own.
  if (tick_queued_.exchange(true)) return;
  Timers& deadlines = timers();
  boost::asio::post(deadlines.io, [this, &deadlines] {
    tick_queued_ = false;
    auto deadline = registry_.NextDeadline();
    const auto now = time_.Now();
    // Under a stepped time a deadline not yet reached waits for the next step, which calls
    // ScheduleTick again; only one already passed arms the timer, to fire at once.
    if (!deadline || (time_.stepped() && *deadline > now)) {
      deadlines.round_timer.cancel();
      return;
    }
    deadlines.round_timer.expires_after(*deadline - now);
    deadlines.round_timer.async_wait([this](const boost::system::error_code& error) {
      if (error) return;  // re-armed or cancelled
      std::vector<RoutedEvent> events;
      std::vector<std::string> forgotten;
      registry_.Tick(time_.Now(), events, &forgotten);
      for (const auto& job_id : forgotten) {
        RunStoreCall([this, job_id] { DropForgottenJob(job_id); });
      }
      Deliver(events);
      ScheduleTick();
    });
  });
}

}  // namespace ddprun
