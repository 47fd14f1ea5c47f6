// SessionClient: an agent's membership in a multi-node job, over one Session stream to the
// rendezvous server. It joins, heartbeats, sends the agent's reports, and hands the server's
// events to the agent. When the stream breaks (the server restarted, the network blinked) it
// reconnects with backoff, re-registers the round the node is running, and sends again the last
// report of that round, so the job goes on.
//
// Threads: the client runs one thread of its own (and a reader per connection); the callbacks
// run on them and must only hand the event off (post it to the agent's loop). Every other method
// may be called from any thread; none blocks on the network.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

struct SessionClientOptions {
  // "host:port" of the rendezvous server, or several, comma-separated: daemons on one etcd, any
  // of which serves the job. The client moves to the next whenever the one it uses fails or does
  // not lead the job, and re-joins there with the round its workers run.
  std::string address;
  ClientSecurity security;
  std::string job_id;
  RendezvousSettings settings;  // sent with the join; the job's first node sets them
  NodeDescription node;
  std::chrono::milliseconds heartbeat_interval{1'000};
  // How long the client keeps trying to reach a server it cannot reach before giving up.
  std::chrono::milliseconds reconnect_timeout{600'000};
};

class SessionClient {
 public:
  using EventHandler = std::function<void(const NodeEvent& event)>;
  // The session is over for good: refused by the server (wrong token, conflicting settings, an
  // ended job) or no server within reconnect_timeout. The message says which and what to do.
  using ErrorHandler = std::function<void(const Status& error)>;

  SessionClient(SessionClientOptions options, EventHandler on_event, ErrorHandler on_error);
  ~SessionClient();  // Close()
  SessionClient(const SessionClient&) = delete;
  SessionClient& operator=(const SessionClient&) = delete;

  // Connects and joins the next round.
  void Start();
  // Asks for the next round again (after a restart event, once the workers are stopped).
  void JoinNextRound();
  // The node now runs `round` (nullopt: it runs nothing): what a reconnect re-registers.
  void SetRunning(std::optional<RunningRound> running);
  void ReportFailure(int64_t round, const WorkerFailure& failure, int exit_status);
  void ReportSuccess(int64_t round);
  // The node's ranks' progress in `round`: sent at once as a heartbeat (a newer one not yet sent
  // replaces it).
  void ReportProgress(int64_t round, const std::vector<RankProgress>& ranks);
  // Tells the server the node leaves the job, then closes the stream (bounded by `grace`).
  void Leave(std::chrono::milliseconds grace = std::chrono::milliseconds(2'000));
  // Closes the stream and stops the client's threads. No callback runs after it returns.
  void Close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddprun
