// RendezvousService: the gRPC callback-API adapter over a JobStore and JobRegistry. It
// authenticates each call, converts messages, routes round events to the agents' Session
// streams, and owns the deadlines (pending waits, rounds) on one timer thread. A remote store's
// calls (etcd: JobStore::CallsBlock) run on threads of the service's own, never on gRPC's. It holds
// no rendezvous logic of its own. Rounds read the time from a SteadyTimeSource: under a stepped one
// (tests) a round's deadlines pass when the time is advanced, not on a real timer.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "ddprun/base/steady_time_source.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/job_leadership.h"
#include "ddprun/rendezvous/job_store.h"
#include "ddprun/rendezvous/shared_credentials.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"
#include "job_registry.h"
#include "rpc_counts.h"

namespace ddprun {

class RendezvousService final : public v1::Rendezvous::CallbackService {
 public:
  // `token` empty: calls are not authenticated. Else every call needs it, but a store call may
  // instead carry the store credential of the job it names, which the job's RoundReady gives
  // its nodes for their workers and which is good until the job ends. `store` and `time` must
  // outlive the service. With `leadership` (which must outlive it too), the service runs only the
  // jobs this server leads: a session's first join claims its job, and a job whose lead is lost
  // is dropped, its sessions ended, so that its agents go to the leader.
  // With `calls` (which must outlive it), each Session is counted there when it ends.
  // With `credentials` (which must outlive it), the jobs' store credentials are shared with the
  // other servers of the store: a job this server claims takes the recorded one, and a store
  // call whose credential this server does not know is checked there.
  RendezvousService(JobStore& store, std::string token, SteadyTimeSource& time,
                    JobLeadership* leadership = nullptr, RpcCounts* calls = nullptr,
                    SharedCredentials* credentials = nullptr);
  ~RendezvousService() override;

  grpc::ServerUnaryReactor* Set(grpc::CallbackServerContext* context, const v1::SetRequest* request,
                                v1::SetResponse* response) override;
  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* context, const v1::GetRequest* request,
                                v1::GetResponse* response) override;
  grpc::ServerUnaryReactor* Wait(grpc::CallbackServerContext* context,
                                 const v1::WaitRequest* request,
                                 v1::WaitResponse* response) override;
  grpc::ServerUnaryReactor* Add(grpc::CallbackServerContext* context, const v1::AddRequest* request,
                                v1::AddResponse* response) override;
  grpc::ServerUnaryReactor* CompareSet(grpc::CallbackServerContext* context,
                                       const v1::CompareSetRequest* request,
                                       v1::CompareSetResponse* response) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const v1::DeleteRequest* request,
                                   v1::DeleteResponse* response) override;
  grpc::ServerBidiReactor<v1::AgentMessage, v1::ServerEvent>* Session(
      grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* DescribeJobs(grpc::CallbackServerContext* context,
                                         const v1::DescribeJobsRequest* request,
                                         v1::DescribeJobsResponse* response) override;

  // No agent is connected and every job has ended (or there is none).
  bool Idle() const;
  // Every job, as `ddprun status` shows it, with its counters.
  std::vector<JobSnapshot> Jobs() const;
  // Agents' session streams open now.
  size_t open_sessions() const;
  // OK when the timer thread, which applies every round's deadlines, runs a task that reads the
  // jobs (so their lock is free) within `bound`; UNAVAILABLE saying which did not otherwise.
  Status CheckResponsive(std::chrono::milliseconds bound);
  // Forgets every job that has ended, with its keys, record and credential, at once: the server
  // stops, and every node has heard the end (an agent's embedded server, once idle). Blocks on
  // a shared store.
  void ForgetEndedJobs();
  // Called, on a gRPC thread, after a session ends or events were delivered: a moment when Idle()
  // may have become true. Must not block.
  void SetChangeCallback(std::function<void()> on_change);

 private:
  class WaitReactor;
  class SessionReactor;
  using SessionKey = std::pair<std::string, std::string>;  // job id, node id

  // Applies one message of a session; a non-OK status ends the stream with it.
  grpc::Status OnAgentMessage(SessionReactor& session, const v1::AgentMessage& message);
  // Whether `message` is a join of a job another server may lead: it must be claimed first.
  bool NeedsClaim(const v1::AgentMessage& message) const;
  // After this server claimed the job of `join`: prepares the job's takeover from the shared
  // store: its credential (the recorded one, else the resuming node's, else a new one; with
  // shared credentials) and its last leader's record. UNAVAILABLE when the store cannot say.
  Status PrepareTakeover(const v1::AgentMessage::Join& join);
  // With leadership: records, fenced by this server's lead, the rounds of each job that
  // `events` decide (docs/control_plane.md, invariant 2): a round formed or the job's end
  // before any node hears of it, a restart as its nodes hear of it (on the blocking threads;
  // a failure gives the job up). The jobs whose record failed: this server lost their lead, or
  // the store cannot be reached; their events must not be delivered.
  std::set<std::string> RecordDecisions(const std::vector<RoutedEvent>& events)
      EXCLUDES(record_mu_);
  // Records job `job_id`'s rounds as they stand now (so a record never goes back: each is read
  // after the last was written). False when it could not be (logged).
  bool RecordNow(const std::string& job_id) EXCLUDES(record_mu_);
  // Gives up jobs whose decisions could not be recorded: their lead, their state here, their
  // sessions (their agents go to whichever server leads them next).
  void GiveUp(const std::set<std::string>& job_ids);
  // A job that ended long ago is forgotten: its lead and record, its credential, its keys.
  // Blocks on a shared store.
  void DropForgottenJob(const std::string& job_id);
  // The lead of job `job_id` was lost: forgets the job, ends its sessions.
  void AbandonJob(const std::string& job_id);
  // Sends each event to its node's session, if it has one, then calls on_change_. Without
  // events it takes no lock of the sessions: a round's delivery holds that lock while it writes
  // to every node (a second at tens of thousands), and the messages that come in meanwhile (the
  // joins its restarts cause) must not stall on it the threads gRPC has for completions.
  void Deliver(const std::vector<RoutedEvent>& events);
  void NotifyChange() EXCLUDES(change_mu_);
  // Re-arms the round timer for the registry's next deadline.
  void ScheduleTick();
  void Register(const SessionKey& key, SessionReactor* session);
  // A Session stream ends with `status`: counted, when calls are.
  void CountSessionEnd(const grpc::Status& status);
  void Unregister(const SessionKey& key, SessionReactor* session);

  // OK, or UNAUTHENTICATED (logged) when the call lacks the server's token.
  grpc::Status Authenticate(grpc::CallbackServerContext* context) const;
  // The same for a store call, which may also carry the store credential of the job whose keys
  // it names (`scope`): what the job's workers hold. Blocks on the network with shared
  // credentials: run it where RunStoreCall runs the call.
  grpc::Status AuthenticateStoreCall(grpc::CallbackServerContext* context,
                                     const v1::StoreScope& scope) const;
  // Runs `call` (a store operation) at once for an in-memory store, else on the blocking
  // threads.
  void RunStoreCall(std::function<void()> call);
  // A unary store call on `scope`'s keys, authenticated, finished with `call`'s status wherever
  // RunStoreCall runs it; `call` fills the response.
  grpc::ServerUnaryReactor* AnswerStoreCall(grpc::CallbackServerContext* context,
                                            const v1::StoreScope& scope,
                                            std::function<grpc::Status()> call);

  JobStore& store_;
  const std::string token_;
  SteadyTimeSource& time_;
  JobLeadership* const leadership_;              // null: this server runs every job that joins
  RpcCounts* const calls_;                       // null: calls are not counted
  SharedCredentials* const shared_credentials_;  // null: this server's own only
  JobRegistry registry_;
  // Held from a job's record being read to its write (RecordDecisions): records reach the shared
  // store in the order the registry made them.
  Mutex record_mu_;
  mutable Mutex sessions_mu_;
  std::map<SessionKey, SessionReactor*> sessions_ GUARDED_BY(sessions_mu_);
  mutable Mutex change_mu_;
  std::function<void()> on_change_ GUARDED_BY(change_mu_);
  // The deadlines' io_context and thread (pending waits, rounds), started by the first call
  // that needs them: a launcher whose workers never use the store starts no thread for it.
  struct Timers;
  Timers& timers();
  std::once_flag timers_started_;
  std::unique_ptr<Timers> timers_;        // set once, under timers_started_
  std::atomic<bool> tick_queued_{false};  // a ScheduleTick is posted and has not run yet
  std::unique_ptr<boost::asio::thread_pool> blocking_store_calls_;  // a remote store's only
};

struct RendezvousService::Timers {
  boost::asio::io_context io;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
      boost::asio::make_work_guard(io)};
  boost::asio::steady_timer round_timer{io};  // used on the timer thread only
  std::thread thread{[this] { io.run(); }};
};

}  // namespace ddprun
