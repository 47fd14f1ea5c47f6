// SessionClient; see session_client.h.
#include "ddprun/rendezvous/session_client.h"

#include <condition_variable>
#include <cstdio>
#include <deque>
#include <thread>

#include "client_channel.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/grpc_status.h"
#include "ddprun/rendezvous/job_leadership.h"
#include "ddprun/rendezvous/proto_conversions.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"
#include "reconnect_backoff.h"

namespace ddprun {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How long the client tries quietly before it says that it cannot reach the server.
constexpr std::chrono::seconds kPatienceBeforeWarning{5};
// How long one wait for the channel to connect lasts before Close and the timeout are checked.
constexpr std::chrono::milliseconds kConnectPoll{200};
// Servers a client dials at most: those it was given and the leaders it was sent to.
constexpr size_t kMostServers = 64;

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
    kLedElsewhere,    // the server does not lead the job (job_leadership.h): try the next
  };

  // One of the servers the client dials; a channel of its own to each.
  struct Server {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1::Rendezvous::Stub> stub;
  };

  static Server OpenServer(const std::string& address, const ClientSecurity& security) {
    auto channel = OpenRendezvousChannel(address, security);
    auto stub = v1::Rendezvous::NewStub(channel);
    return {address, std::move(channel), std::move(stub)};
  }

  static std::vector<Server> OpenServers(const SessionClientOptions& options) {
    std::vector<Server> servers;
    for (const std::string& entry : SplitCommas(options.address)) {
      std::string address = Trim(entry);
      if (!address.empty()) servers.push_back(OpenServer(address, options.security));
    }
    if (servers.empty()) servers.push_back(OpenServer(options.address, options.security));
    return servers;
  }

  Impl(SessionClientOptions session_options, EventHandler event_handler, ErrorHandler error_handler)
      : options(std::move(session_options)),
        on_event(std::move(event_handler)),
        on_error(std::move(error_handler)),
        servers(OpenServers(options)),
        log(GetLogger("agent")) {}

  const SessionClientOptions options;
  const EventHandler on_event;
  const ErrorHandler on_error;
  // Those given, then the leaders servers sent the client to; after construction, read and
  // grown by the client's thread only.
  std::vector<Server> servers;
  size_t current = 0;  // the server tried now; read and moved by the client's thread only
  // Where the last server that did not lead the job said its leader is; the client's thread's.
  std::string leader_hint;
  std::shared_ptr<spdlog::logger> log;

  Mutex mu;
  std::condition_variable_any cv;
  std::deque<v1::AgentMessage> outbox GUARDED_BY(mu);
  std::optional<RunningRound> running GUARDED_BY(mu);
  // When the last session a server ran ended (broke, or its server stopped leading the job): a
  // re-join says how long ago (RunningRound.server_silent).
  std::optional<SteadyClock::time_point> server_lost_at GUARDED_BY(mu);
  std::optional<v1::AgentMessage> report GUARDED_BY(mu);  // the running round's last report
  // The newest progress heartbeat not sent yet: a newer one replaces it, so a broken stream
  // never piles them up.
  std::optional<v1::AgentMessage> progress GUARDED_BY(mu);
  bool closing GUARDED_BY(mu) = false;
  bool leaving GUARDED_BY(mu) = false;
  std::chrono::milliseconds leave_grace GUARDED_BY(mu){0};
  bool stream_ended GUARDED_BY(mu) = false;  // the current stream's reader saw its end
  std::thread thread;

  v1::AgentMessage JoinMessageLocked() const REQUIRES(mu) {
    v1::AgentMessage message;
    auto* join = message.mutable_join();
    join->set_job_id(options.job_id);
    ToProto(options.settings, *join->mutable_settings());
    ToProto(options.node, *join->mutable_node());
    if (running) {
      RunningRound resumed = *running;
      if (server_lost_at) {
        resumed.server_silent = std::chrono::duration_cast<std::chrono::milliseconds>(
            SteadyClock::now() - *server_lost_at);
      }
      ToProto(resumed, *join->mutable_running());
    }
    return message;
  }

  void Enqueue(v1::AgentMessage message) {
    {
      MutexLock lock(mu);
      outbox.push_back(std::move(message));
    }
    cv.notify_all();
  }

  void Report(v1::AgentMessage message) {
    {
      MutexLock lock(mu);
      report = message;
      outbox.push_back(std::move(message));
    }
    cv.notify_all();
  }

  // Connects until the session ends: Close, a refusal, or reconnect_timeout without a server.
  void Run() {
    auto reachable_at = SteadyClock::now();
    auto backoff = kFirstReconnectBackoff;
    std::string last_error;
    bool warned = false;  // that the server cannot be reached yet
    while (true) {
      const Outcome outcome = Connect(last_error);
      if (outcome == Outcome::kEnded) return;
      const std::string tried = servers[current].address;
      // Any of the servers serves the job (daemons on one etcd): on any failure, the next, unless
      // the server named the job's leader.
      current = outcome == Outcome::kLedElsewhere && !leader_hint.empty()
                    ? ServerAt(leader_hint)
                    : (current + 1) % servers.size();
      const auto now = SteadyClock::now();
      if (outcome == Outcome::kBroken) {
        reachable_at = now;
        backoff = kFirstReconnectBackoff;
        warned = false;
        log->warn("lost the rendezvous server at {} ({}); reconnecting{}", tried, last_error,
                  servers.size() > 1 ? " to " + servers[current].address : "");
      }
      if (outcome == Outcome::kLedElsewhere) {
        // A server answered: the job's leader is one of the others, or soon will be.
        reachable_at = now;
        backoff = kFirstReconnectBackoff;
        log->debug("{} does not lead the job ({}); trying {}", tried, last_error,
                   servers[current].address);
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
      MutexLock lock(mu);
      if (closing) return;
      if (outcome == Outcome::kNotReady) continue;  // gRPC's channel backs off by itself
      if (cv.wait_for(lock, backoff, [this]() REQUIRES(mu) { return closing; })) return;
      backoff = NextReconnectBackoff(backoff);
    }
  }

  // The index of the server at `address`, opened now when the client has none there (at most
  // kMostServers: past them, the next server instead).
  size_t ServerAt(const std::string& address) {
    for (size_t i = 0; i < servers.size(); ++i) {
      if (servers[i].address == address) return i;
    }
    if (servers.size() >= kMostServers) return (current + 1) % servers.size();
    servers.push_back(OpenServer(address, options.security));
    return servers.size() - 1;
  }

  // One stream: join, resend the round's last report, then heartbeats and queued messages until
  // the stream breaks or the client closes.
  Outcome Connect(std::string& last_error) {
    // Waits for the channel to connect, so that a stream starts only when it can succeed: a call
    // made while the channel is failing fails at once with the last error, however quickly the
    // server comes (back) up.
    const Server& server = servers[current];
    if (!server.channel->WaitForConnected(std::chrono::system_clock::now() + kConnectPoll)) {
      if (last_error.empty()) last_error = "cannot connect";
      return Outcome::kNotReady;
    }
    grpc::ClientContext context;
    AddToken(context, options.security);
    v1::AgentMessage join;
    std::optional<v1::AgentMessage> resent;
    {
      MutexLock lock(mu);
      if (closing) return Outcome::kEnded;
      join = JoinMessageLocked();
      resent = report;
      outbox.clear();  // the join and the report carry everything that was queued
      stream_ended = false;
    }
    auto stream = server.stub->Session(&context);
    const auto stream_started = SteadyClock::now();
    bool connected = stream->Write(join) && (!resent || stream->Write(*resent));
    std::thread reader;
    if (connected) {
      reader = std::thread([this, &stream] {
        v1::ServerEvent event;
        while (stream->Read(&event)) on_event(FromProto(event));
        {
          MutexLock lock(mu);
          stream_ended = true;
        }
        cv.notify_all();
      });
      Pump(*stream);
    }
    {
      // The server ended the stream (or never took it): its status is what Finish must report.
      // Otherwise this side ends it, and the cancel wakes the reader.
      MutexLock lock(mu);
      if (connected && !stream_ended) context.TryCancel();
    }
    if (reader.joinable()) reader.join();
    const grpc::Status status = stream->Finish();
    last_error = status.error_message().empty() ? "the stream ended" : status.error_message();
    log->debug("session stream to {} ended ({}connected): {}", server.address,
               connected ? "" : "never ", last_error);
    {
      MutexLock lock(mu);
      if (closing) return Outcome::kEnded;
    }
    if (IsRefusal(status.error_code())) {
      on_error(Status(FromGrpcStatus(status).code(), "the rendezvous server at " + server.address +
                                                         " refused this node: " + last_error));
      return Outcome::kEnded;
    }
    // Where the session lived a heartbeat, its server ran it until now: the time a re-join
    // reports its silence from (a server that turns a node away at once says nothing of that).
    const auto ended = SteadyClock::now();
    const bool ran = connected && ended - stream_started >= options.heartbeat_interval;
    const auto& trailers = context.GetServerTrailingMetadata();
    if (trailers.count(kLedElsewhereMetadataKey) > 0) {
      if (ran) SetServerLostAt(ended);
      auto leader = trailers.find(kLeaderAddressMetadataKey);
      leader_hint = leader == trailers.end()
                        ? std::string()
                        : std::string(leader->second.data(), leader->second.size());
      return Outcome::kLedElsewhere;
    }
    if (connected) SetServerLostAt(ended);
    return connected ? Outcome::kBroken : Outcome::kNeverConnected;
  }

  void SetServerLostAt(SteadyClock::time_point at) {
    MutexLock lock(mu);
    server_lost_at = at;
  }

  void Pump(grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerEvent>& stream) {
    auto next_heartbeat = SteadyClock::now() + options.heartbeat_interval;
    v1::AgentMessage heartbeat;
    heartbeat.mutable_heartbeat();
    while (true) {
      MutexLock lock(mu);
      cv.wait_until(lock, next_heartbeat, [this]() REQUIRES(mu) {
        return closing || stream_ended || !outbox.empty() || progress.has_value();
      });
      if (stream_ended) return;
      if (closing) {
        if (!leaving) return;
        lock.unlock();
        v1::AgentMessage leave;
        leave.mutable_leave();
        if (stream.Write(leave)) stream.WritesDone();
        lock.lock();
        // The server ends the stream once it has the leave; wait for that, boundedly.
        cv.wait_for(lock, leave_grace, [this]() REQUIRES(mu) { return stream_ended; });
        return;
      }
      std::deque<v1::AgentMessage> batch;
      batch.swap(outbox);
      if (progress) {
        batch.push_back(std::move(*progress));
        progress.reset();
        next_heartbeat = SteadyClock::now() + options.heartbeat_interval;  // it is one
      }
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
      MutexLock lock(mu);
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
    MutexLock lock(impl_->mu);
    impl_->running.reset();
    impl_->report.reset();
    join = impl_->JoinMessageLocked();
  }
  impl_->Enqueue(std::move(join));
}

void SessionClient::SetRunning(std::optional<RunningRound> running) {
  MutexLock lock(impl_->mu);
  impl_->running = running;
  impl_->report.reset();
}

void SessionClient::ReportFailure(int64_t round, const WorkerFailure& failure, int exit_status) {
  v1::AgentMessage message;
  auto* failed = message.mutable_worker_failed();
  failed->set_round(round);
  ToProto(failure, *failed->mutable_failure());
  failed->set_exit_status(exit_status);
  impl_->Report(std::move(message));
}

void SessionClient::ReportProgress(int64_t round, const std::vector<RankProgress>& ranks) {
  v1::AgentMessage message;
  auto* heartbeat = message.mutable_heartbeat();
  heartbeat->set_round(round);
  for (const RankProgress& rank : ranks) ToProto(rank, *heartbeat->add_progress());
  {
    MutexLock lock(impl_->mu);
    impl_->progress = std::move(message);
  }
  impl_->cv.notify_all();
}

void SessionClient::ReportSuccess(int64_t round) {
  v1::AgentMessage message;
  message.mutable_succeeded()->set_round(round);
  impl_->Report(std::move(message));
}

void SessionClient::Leave(std::chrono::milliseconds grace) { impl_->Stop(true, grace); }

void SessionClient::Close() { impl_->Stop(false, std::chrono::milliseconds(0)); }

}  // namespace ddprun
