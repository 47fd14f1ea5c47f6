// SessionClient; see session_client.h.
#include "ddprun/rendezvous/session_client.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <thread>

#include "client_channel.h"
#include "ddprun/base/logging.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"
#include "grpc_status.h"

namespace ddprun {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr std::chrono::milliseconds kFirstBackoff{50};
constexpr std::chrono::milliseconds kMaxBackoff{1'000};
// How long the client tries quietly before it says that it cannot reach the server.
constexpr std::chrono::seconds kPatienceBeforeWarning{5};
// How long one wait for the channel to connect lasts before Close and the timeout are checked.
constexpr std::chrono::milliseconds kConnectPoll{200};

NodeEvent FromProto(const v1::ServerEvent& proto) {
  NodeEvent event{"", NodeEvent::Type::kRestart, {}, "", 1};
  switch (proto.kind_case()) {
    case v1::ServerEvent::kRoundReady: {
      const auto& ready = proto.round_ready();
      event.type = NodeEvent::Type::kRoundReady;
      event.assignment = {ready.round(),
                          ready.group_rank(),
                          ready.group_world_size(),
                          ready.first_global_rank(),
                          ready.world_size(),
                          ready.master_addr(),
                          ready.master_port(),
                          ready.restart_count()};
      break;
    }
    case v1::ServerEvent::kRestart:
      event.reason = proto.restart().reason();
      break;
    case v1::ServerEvent::kJobComplete:
      event.type = NodeEvent::Type::kJobComplete;
      break;
    case v1::ServerEvent::kJobFailed:
      event.type = NodeEvent::Type::kJobFailed;
      event.reason = proto.job_failed().reason();
      event.exit_status = proto.job_failed().exit_status();
      break;
    case v1::ServerEvent::KIND_NOT_SET:
      event.reason = "the rendezvous server sent an empty event";
      break;
  }
  return event;
}

// Codes that retrying cannot fix: the server refused this node.
bool IsRefusal(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAUTHENTICATED || code == grpc::StatusCode::PERMISSION_DENIED ||
         code == grpc::StatusCode::INVALID_ARGUMENT ||
         code == grpc::StatusCode::FAILED_PRECONDITION || code == grpc::StatusCode::UNIMPLEMENTED;
}

}  // namespace

struct SessionClient::Impl {
  enum class Outcome {
    kEnded,           // closed, or refused: no more connections
    kBroken,          // a stream that worked broke
    kNeverConnected,  // the stream failed before it worked
    kNotReady,        // the channel did not connect within kConnectPoll
  };

  Impl(SessionClientOptions session_options, EventHandler event_handler, ErrorHandler error_handler)
      : options(std::move(session_options)),
        on_event(std::move(event_handler)),
        on_error(std::move(error_handler)),
        channel(OpenRendezvousChannel(options.address, options.security)),
        stub(v1::Rendezvous::NewStub(channel)),
        log(GetLogger("agent")) {}

  const SessionClientOptions options;
  const EventHandler on_event;
  const ErrorHandler on_error;
  const std::shared_ptr<grpc::Channel> channel;
  const std::unique_ptr<v1::Rendezvous::Stub> stub;
  std::shared_ptr<spdlog::logger> log;

  std::mutex mu;
  std::condition_variable cv;
  std::deque<v1::AgentMessage> outbox;     // guarded by mu
  std::optional<RunningRound> running;     // guarded by mu
  std::optional<v1::AgentMessage> report;  // guarded by mu; the running round's last report
  bool closing = false;                    // guarded by mu
  bool leaving = false;                    // guarded by mu
  std::chrono::milliseconds leave_grace{0};
  bool stream_ended = false;  // guarded by mu; the current stream's reader saw its end
  std::thread thread;

  v1::AgentMessage JoinMessageLocked() const {
    v1::AgentMessage message;
    auto* join = message.mutable_join();
    join->set_job_id(options.job_id);
    auto* settings = join->mutable_settings();
    settings->set_min_nodes(options.settings.min_nodes);
    settings->set_max_nodes(options.settings.max_nodes);
    settings->set_max_restarts(options.settings.max_restarts);
    settings->set_join_timeout_ms(options.settings.join_timeout.count());
    settings->set_last_call_timeout_ms(options.settings.last_call_timeout.count());
    settings->set_heartbeat_timeout_ms(options.settings.heartbeat_timeout.count());
    auto* node = join->mutable_node();
    node->set_node_id(options.node.node_id);
    node->set_host(options.node.host);
    node->set_nproc(options.node.nproc);
    node->set_master_port(options.node.master_port);
    if (running) {
      auto* round = join->mutable_running();
      round->set_round(running->round);
      round->set_group_rank(running->group_rank);
      round->set_group_world_size(running->group_world_size);
      round->set_restart_count(running->restart_count);
    }
    return message;
  }

  void Enqueue(v1::AgentMessage message) {
    {
      std::lock_guard lock(mu);
      outbox.push_back(std::move(message));
    }
    cv.notify_all();
  }

  void Report(v1::AgentMessage message) {
    {
      std::lock_guard lock(mu);
      report = message;
      outbox.push_back(std::move(message));
    }
    cv.notify_all();
  }

  // Connects until the session ends: Close, a refusal, or reconnect_timeout without a server.
  void Run() {
    auto reachable_at = SteadyClock::now();
    auto backoff = kFirstBackoff;
    std::string last_error;
    bool warned = false;  // that the server cannot be reached yet
    while (true) {
      const Outcome outcome = Connect(last_error);
      if (outcome == Outcome::kEnded) return;
      const auto now = SteadyClock::now();
      if (outcome == Outcome::kBroken) {
        reachable_at = now;
        backoff = kFirstBackoff;
        warned = false;
        log->warn("lost the rendezvous server at {} ({}); reconnecting", options.address,
                  last_error);
      }
      if (!warned && now - reachable_at > kPatienceBeforeWarning) {
        warned = true;
        std::fprintf(stderr,
                     "ddprun: still trying to reach the rendezvous server at %s (%s); giving up "
                     "after %lld s (join_timeout)\n",
                     options.address.c_str(), last_error.c_str(),
                     static_cast<long long>(options.reconnect_timeout.count() / 1000));
      }
      if (now - reachable_at > options.reconnect_timeout) {
        on_error(
            UnavailableError("cannot reach the rendezvous server at " + options.address + " for " +
                             std::to_string(options.reconnect_timeout.count() / 1000) + " s (" +
                             last_error + "); check --rdzv_endpoint and that the server runs"));
        return;
      }
      std::unique_lock lock(mu);
      if (closing) return;
      if (outcome == Outcome::kNotReady) continue;  // gRPC's channel backs off by itself
      if (cv.wait_for(lock, backoff, [this] { return closing; })) return;
      backoff = std::min(backoff * 2, kMaxBackoff);
    }
  }

  // One stream: join, resend the round's last report, then heartbeats and queued messages until
  // the stream breaks or the client closes.
  Outcome Connect(std::string& last_error) {
    // Waits for the channel to connect, so that a stream starts only when it can succeed: a call
    // made while the channel is failing fails at once with the last error, however quickly the
    // server comes (back) up.
    if (!channel->WaitForConnected(std::chrono::system_clock::now() + kConnectPoll)) {
      if (last_error.empty()) last_error = "cannot connect";
      return Outcome::kNotReady;
    }
    grpc::ClientContext context;
    AddToken(context, options.security);
    v1::AgentMessage join;
    std::optional<v1::AgentMessage> resent;
    {
      std::lock_guard lock(mu);
      if (closing) return Outcome::kEnded;
      join = JoinMessageLocked();
      resent = report;
      outbox.clear();  // the join and the report carry everything that was queued
      stream_ended = false;
    }
    auto stream = stub->Session(&context);
    bool connected = stream->Write(join) && (!resent || stream->Write(*resent));
    std::thread reader;
    if (connected) {
      reader = std::thread([this, &stream] {
        v1::ServerEvent event;
        while (stream->Read(&event)) on_event(FromProto(event));
        {
          std::lock_guard lock(mu);
          stream_ended = true;
        }
        cv.notify_all();
      });
      Pump(*stream);
    }
    {
      // The server ended the stream (or never took it): its status is what Finish must report.
      // Otherwise this side ends it, and the cancel wakes the reader.
      std::lock_guard lock(mu);
      if (connected && !stream_ended) context.TryCancel();
    }
    if (reader.joinable()) reader.join();
    const grpc::Status status = stream->Finish();
    last_error = status.error_message().empty() ? "the stream ended" : status.error_message();
    log->debug("session stream to {} ended ({}connected): {}", options.address,
               connected ? "" : "never ", last_error);
    {
      std::lock_guard lock(mu);
      if (closing) return Outcome::kEnded;
    }
    if (IsRefusal(status.error_code())) {
      on_error(Status(FromGrpcStatus(status).code(), "the rendezvous server at " + options.address +
                                                         " refused this node: " + last_error));
      return Outcome::kEnded;
    }
    return connected ? Outcome::kBroken : Outcome::kNeverConnected;
  }

  void Pump(grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerEvent>& stream) {
    auto next_heartbeat = SteadyClock::now() + options.heartbeat_interval;
    v1::AgentMessage heartbeat;
    heartbeat.mutable_heartbeat();
    while (true) {
      std::unique_lock lock(mu);
      cv.wait_until(lock, next_heartbeat,
                    [this] { return closing || stream_ended || !outbox.empty(); });
      if (stream_ended) return;
      if (closing) {
        if (!leaving) return;
        lock.unlock();
        v1::AgentMessage leave;
        leave.mutable_leave();
        if (stream.Write(leave)) stream.WritesDone();
        lock.lock();
        // The server ends the stream once it has the leave; wait for that, boundedly.
        cv.wait_for(lock, leave_grace, [this] { return stream_ended; });
        return;
      }
      std::deque<v1::AgentMessage> batch;
      batch.swap(outbox);
      lock.unlock();
      for (const auto& message : batch) {
        if (!stream.Write(message)) return;
      }
      if (SteadyClock::now() >= next_heartbeat) {
        if (!stream.Write(heartbeat)) return;
        next_heartbeat = SteadyClock::now() + options.heartbeat_interval;
      }
    }
  }

  void Stop(bool leave, std::chrono::milliseconds grace) {
    {
      std::lock_guard lock(mu);
      closing = true;
      leaving = leave;
      leave_grace = grace;
    }
    cv.notify_all();
    if (thread.joinable()) thread.join();
  }
};

SessionClient::SessionClient(SessionClientOptions options, EventHandler on_event,
                             ErrorHandler on_error)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(on_event), std::move(on_error))) {}

SessionClient::~SessionClient() { Close(); }

void SessionClient::Start() {
  impl_->thread = std::thread([this] { impl_->Run(); });
}

void SessionClient::JoinNextRound() {
  v1::AgentMessage join;
  {
    std::lock_guard lock(impl_->mu);
    impl_->running.reset();
    impl_->report.reset();
    join = impl_->JoinMessageLocked();
  }
  impl_->Enqueue(std::move(join));
}

void SessionClient::SetRunning(std::optional<RunningRound> running) {
  std::lock_guard lock(impl_->mu);
  impl_->running = running;
  impl_->report.reset();
}

void SessionClient::ReportFailure(int64_t round, const std::string& description, int exit_status) {
  v1::AgentMessage message;
  auto* failed = message.mutable_worker_failed();
  failed->set_round(round);
  failed->set_description(description);
  failed->set_exit_status(exit_status);
  impl_->Report(std::move(message));
}

void SessionClient::ReportSuccess(int64_t round) {
  v1::AgentMessage message;
  message.mutable_succeeded()->set_round(round);
  impl_->Report(std::move(message));
}

void SessionClient::Leave(std::chrono::milliseconds grace) { impl_->Stop(true, grace); }

void SessionClient::Close() { impl_->Stop(false, std::chrono::milliseconds(0)); }

}  // namespace ddprun
