// RendezvousService; see rendezvous_service.h.
#include "rendezvous_service.h"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <future>

#include "ddprun/base/logging.h"
#include "ddprun/base/secret_token.h"
#include "ddprun/rendezvous/call_authentication.h"
#include "ddprun/rendezvous/grpc_status.h"
#include "ddprun/rendezvous/proto_conversions.h"
#include "job_record_codec.h"
#include "session_reactor.h"

namespace ddprun {
namespace {

constexpr int64_t kMaxWaitMs = 24LL * 3600 * 1000;
// Threads that run a remote store's calls (each waits a few milliseconds on etcd).
constexpr size_t kBlockingStoreThreads = 8;

StoreScopeKey ScopeOf(const v1::StoreScope& scope) { return {scope.job_id(), scope.round()}; }

Result<std::string> MintStoreCredential() { return NewSecretToken("a job's store credential"); }

grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context, const grpc::Status& status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}

}  // namespace

// A pending Wait. Exactly one of three things finishes it: the store's ready callback, the
// deadline timer, or the client's cancellation. JobStore::CancelWait arbitrates: the timer
// and the cancellation may call Finish only after they removed the waiter themselves.
// The timer is touched only on the timer thread (asio timers are not thread-safe).
class RendezvousService::WaitReactor final : public grpc::ServerUnaryReactor {
 public:
  WaitReactor(JobStore& store, boost::asio::io_context& timers)
      : store_(store), state_(std::make_shared<State>(timers)) {}

  void Start(const v1::WaitRequest& request) {
    if (request.timeout_ms() <= 0 || request.timeout_ms() > kMaxWaitMs) {
      Finish({grpc::StatusCode::INVALID_ARGUMENT, "wait timeout_ms must be in (0, " +
                                                      std::to_string(kMaxWaitMs) + "], not " +
                                                      std::to_string(request.timeout_ms())});
      return;
    }
    // Read before the wait starts: its ready callback may finish the call, and gRPC then frees
    // `request`.
    const auto timeout = std::chrono::milliseconds(request.timeout_ms());
    std::vector<std::string> keys(request.keys().begin(), request.keys().end());
    auto state = state_;
    JobStore& store = store_;
    auto waiter = store.WaitAsync(ScopeOf(request.scope()), keys, [this, state] {
      state->done = true;
      boost::asio::post(state->timer.get_executor(), [state] { state->timer.cancel(); });
      Finish(grpc::Status::OK);
    });
    if (!waiter.ok()) {
      Finish(ToGrpcStatus(waiter.status()));
      return;
    }
    // From here on the ready callback may have finished (and deleted) this reactor: use only
    // copies of what is needed.
    state->waiter_id = waiter.value();
    std::string description = "wait for " + std::to_string(keys.size()) +
                              " key(s) timed out after " + std::to_string(timeout.count()) + " ms";
    boost::asio::post(state->timer.get_executor(), [this, state, timeout, description, &store] {
      if (state->done) return;
      state->timer.expires_after(timeout);
      state->timer.async_wait(
          [this, state, description, &store](const boost::system::error_code& error) {
            if (error) return;  // cancelled: the wait completed
            if (store.CancelWait(state->waiter_id)) {
              Finish({grpc::StatusCode::DEADLINE_EXCEEDED, description});
            }
          });
    });
  }

  void OnCancel() override {
    const auto id = state_->waiter_id.load();
    if (id != 0 && store_.CancelWait(id)) {
      state_->done = true;
      boost::asio::post(state_->timer.get_executor(), [state = state_] { state->timer.cancel(); });
      Finish({grpc::StatusCode::CANCELLED, "wait cancelled by the client"});
    }
  }

  void OnDone() override { delete this; }

 private:
  struct State {
    explicit State(boost::asio::io_context& timers) : timer(timers) {}
    boost::asio::steady_timer timer;
    std::atomic<JobStore::WaiterId> waiter_id{0};
    std::atomic<bool> done{false};
  };

  JobStore& store_;
  std::shared_ptr<State> state_;
};

RendezvousService::RendezvousService(JobStore& store, std::string token, SteadyTimeSource& time,
                                     JobLeadership* leadership, RpcCounts* calls,
                                     SharedCredentials* credentials)
    : store_(store),
      token_(std::move(token)),
      time_(time),
      leadership_(leadership),
      calls_(calls),
      shared_credentials_(credentials),
      registry_(
          JobLimits{}, token_.empty() ? JobRegistry::CredentialMint{} : MintStoreCredential,
          credentials == nullptr
              ? JobRegistry::CredentialRevoked{}
              : [this](const std::string& job_id) {
                  RunStoreCall([this, job_id] { shared_credentials_->Revoke(job_id); });
                }) {
  // A claim of a job's lead, and a check of a shared credential, wait on the network too.
  if (store_.CallsBlock() || leadership_ || shared_credentials_) {
    blocking_store_calls_ = std::make_unique<boost::asio::thread_pool>(kBlockingStoreThreads);
  }
  time_.OnStep([this] { ScheduleTick(); });
  if (leadership_) {
    leadership_->SetLostCallback([this](const std::string& job_id) { AbandonJob(job_id); });
  }
}

RendezvousService::~RendezvousService() {
  if (leadership_) leadership_->SetLostCallback(nullptr);  // waits for a call in progress
  time_.OnStep({});                                        // waits for a step's call in progress
  if (timers_) {
    timers_->work.reset();
    timers_->io.stop();
    timers_->thread.join();
  }
  // After the timers: their thread posts the ended jobs' DropJob here.
  if (blocking_store_calls_) blocking_store_calls_->join();
}

RendezvousService::Timers& RendezvousService::timers() {
  std::call_once(timers_started_, [this] { timers_ = std::make_unique<Timers>(); });
  return *timers_;
}

grpc::Status RendezvousService::Authenticate(grpc::CallbackServerContext* context) const {
  return AuthenticateCall(*context, token_);
}

grpc::Status RendezvousService::AuthenticateStoreCall(grpc::CallbackServerContext* context,
                                                      const v1::StoreScope& scope) const {
  return AuthenticateCall(*context, token_, [this, &scope](std::string_view presented) {
    return registry_.AcceptsStoreCredential(scope.job_id(), presented) ||
           (shared_credentials_ != nullptr &&
            shared_credentials_->Accepts(scope.job_id(), presented));
  });
}

Status RendezvousService::PrepareTakeover(const v1::AgentMessage::Join& join) {
  const std::string& job_id = join.job_id();
  JobTakeover takeover;
  if (shared_credentials_ != nullptr && !token_.empty()) {
    // The resuming node's, where it has one: its workers hold it, if no server recorded another.
    std::string candidate = join.running().store_credential();
    if (candidate.empty() || candidate.size() > JobLimits{}.max_id_bytes) {
      auto minted = MintStoreCredential();
      if (!minted.ok()) return minted.status();
      candidate = std::move(minted).value();
    }
    auto secret = shared_credentials_->Establish(job_id, candidate);
    if (!secret.ok()) return secret.status();
    takeover.credential = std::move(secret).value();
  }
  auto recorded = leadership_->Recorded(job_id);
  if (!recorded.ok()) return recorded.status();
  if (recorded->has_value()) {
    auto record = DecodeJobRecord(**recorded);
    if (record.ok()) {
      takeover.record = std::move(record).value();
    } else {
      GetLogger("rendezvous")
          ->warn(
              "the record of job '{}' in the shared store is unreadable ({}); the job is "
              "rebuilt from its agents' re-joins",
              job_id, record.status().message());
    }
  }
  registry_.PrepareTakeover(job_id, std::move(takeover));
  return Status::Ok();
}

std::set<std::string> RendezvousService::RecordDecisions(const std::vector<RoutedEvent>& events) {
  std::set<std::string> told_after;   // a round formed, or the end: recorded before it is told
  std::set<std::string> told_before;  // a restart alone: recorded as it is told
  for (const RoutedEvent& routed : events) {
    switch (routed.event.type) {
      case NodeEvent::Type::kRoundReady:
      case NodeEvent::Type::kJobComplete:
      case NodeEvent::Type::kJobFailed:
        told_after.insert(routed.job_id);
        break;
      case NodeEvent::Type::kRestart:
        told_before.insert(routed.job_id);
        break;
      case NodeEvent::Type::kHang:
      case NodeEvent::Type::kStraggler:
        break;
    }
  }
  std::set<std::string> unrecorded;
  for (const std::string& job_id : told_after) {
    told_before.erase(job_id);
    if (!RecordNow(job_id)) unrecorded.insert(job_id);
  }
  for (const std::string& job_id : told_before) {
    // Its nodes stop their workers while etcd takes the record: a restart costs one write on
    // the way to the next round, not two. The next round's record waits for this one.
    RunStoreCall([this, job_id] {
      if (!RecordNow(job_id)) GiveUp({job_id});
    });
  }
  return unrecorded;
}

bool RendezvousService::RecordNow(const std::string& job_id) {
  MutexLock lock(record_mu_);
  std::optional<JobRounds::Record> record = registry_.Record(job_id);
  if (!record) return true;  // forgotten since: nothing to record
  const bool ended =
      record->state == JobRounds::State::kComplete || record->state == JobRounds::State::kFailed;
  Status recorded = leadership_->Record(job_id, EncodeJobRecord(*record), ended);
  if (recorded.ok()) return true;
  GetLogger("rendezvous")
      ->warn(
          "job '{}': its rounds could not be recorded in the shared store ({}); this server "
          "gives the job up, and its agents go to its leader",
          job_id, recorded.message());
  return false;
}

void RendezvousService::GiveUp(const std::set<std::string>& job_ids) {
  for (const std::string& job_id : job_ids) {
    leadership_->Release(job_id);  // so that a re-join here claims the job again, from etcd
    AbandonJob(job_id);
  }
}

void RendezvousService::DropForgottenJob(const std::string& job_id) {
  if (leadership_) leadership_->Forget(job_id);
  if (shared_credentials_) shared_credentials_->Revoke(job_id);  // if its end's did not
  if (Status dropped = store_.DropJob(job_id); !dropped.ok()) {
    GetLogger("rendezvous")
        ->warn("the store keys of ended job '{}' stay: {}", job_id, dropped.message());
  }
}

void RendezvousService::ForgetEndedJobs() {
  for (const std::string& job_id : registry_.ForgetEnded()) DropForgottenJob(job_id);
}

void RendezvousService::RunStoreCall(std::function<void()> call) {
  if (blocking_store_calls_) {
    boost::asio::post(*blocking_store_calls_, std::move(call));
  } else {
    call();
  }
}

grpc::ServerUnaryReactor* RendezvousService::AnswerStoreCall(grpc::CallbackServerContext* context,
                                                             const v1::StoreScope& scope,
                                                             std::function<grpc::Status()> call) {
  auto* reactor = context->DefaultReactor();
  RunStoreCall([this, context, &scope, reactor, call = std::move(call)] {
    grpc::Status auth = AuthenticateStoreCall(context, scope);
    reactor->Finish(auth.ok() ? call() : auth);
  });
  return reactor;
}

grpc::ServerUnaryReactor* RendezvousService::Set(grpc::CallbackServerContext* context,
                                                 const v1::SetRequest* request, v1::SetResponse*) {
  return AnswerStoreCall(context, request->scope(), [this, request] {
    return ToGrpcStatus(store_.Set(ScopeOf(request->scope()), request->key(), request->value()));
  });
}

grpc::ServerUnaryReactor* RendezvousService::Get(grpc::CallbackServerContext* context,
                                                 const v1::GetRequest* request,
                                                 v1::GetResponse* response) {
  return AnswerStoreCall(context, request->scope(), [this, request, response] {
    auto value = store_.Get(ScopeOf(request->scope()), request->key());
    if (value.ok()) response->set_value(std::move(value).value());
    return ToGrpcStatus(value.status());
  });
}

grpc::ServerUnaryReactor* RendezvousService::Wait(grpc::CallbackServerContext* context,
                                                  const v1::WaitRequest* request,
                                                  v1::WaitResponse*) {
  auto* reactor = new WaitReactor(store_, timers().io);
  RunStoreCall([this, context, reactor, request] {
    if (grpc::Status auth = AuthenticateStoreCall(context, request->scope()); !auth.ok()) {
      reactor->Finish(auth);
      return;
    }
    reactor->Start(*request);
  });
  return reactor;
}

grpc::ServerUnaryReactor* RendezvousService::Add(grpc::CallbackServerContext* context,
                                                 const v1::AddRequest* request,
                                                 v1::AddResponse* response) {
  return AnswerStoreCall(context, request->scope(), [this, request, response] {
    auto sum = store_.Add(ScopeOf(request->scope()), request->key(), request->delta());
    if (sum.ok()) response->set_value(sum.value());
    return ToGrpcStatus(sum.status());
  });
}

grpc::ServerUnaryReactor* RendezvousService::CompareSet(grpc::CallbackServerContext* context,
                                                        const v1::CompareSetRequest* request,
                                                        v1::CompareSetResponse* response) {
  return AnswerStoreCall(context, request->scope(), [this, request, response] {
    auto outcome = store_.CompareSet(ScopeOf(request->scope()), request->key(), request->expected(),
                                     request->desired());
    if (outcome.ok()) {
      response->set_value(outcome->value);
      response->set_swapped(outcome->swapped);
    }
    return ToGrpcStatus(outcome.status());
  });
}

grpc::ServerUnaryReactor* RendezvousService::Delete(grpc::CallbackServerContext* context,
                                                    const v1::DeleteRequest* request,
                                                    v1::DeleteResponse* response) {
  return AnswerStoreCall(context, request->scope(), [this, request, response] {
    auto deleted = store_.Delete(ScopeOf(request->scope()), request->key());
    if (deleted.ok()) response->set_deleted(deleted.value());
    return ToGrpcStatus(deleted.status());
  });
}

grpc::ServerUnaryReactor* RendezvousService::DescribeJobs(grpc::CallbackServerContext* context,
                                                          const v1::DescribeJobsRequest* request,
                                                          v1::DescribeJobsResponse* response) {
  if (auto auth = Authenticate(context); !auth.ok()) return Finish(context, auth);
  auto jobs = registry_.Snapshot(request->job_id(), time_.Now());
  if (jobs.ok()) {
    for (const JobSnapshot& job : jobs.value()) ToProto(job, *response->add_jobs());
  }
  return Finish(context, ToGrpcStatus(jobs.status()));
}

void RendezvousService::CountSessionEnd(const grpc::Status& status) {
  if (calls_ != nullptr) calls_->Add("/ddprun.v1.Rendezvous/Session", status.error_code());
}

std::vector<JobSnapshot> RendezvousService::Jobs() const {
  auto jobs = registry_.Snapshot("", time_.Now());
  return jobs.ok() ? std::move(jobs).value() : std::vector<JobSnapshot>{};
}

size_t RendezvousService::open_sessions() const {
  MutexLock lock(sessions_mu_);
  return sessions_.size();
}

Status RendezvousService::CheckResponsive(std::chrono::milliseconds bound) {
  // Shared with the task: one that runs after the bound finds the promise still there.
  auto answered = std::make_shared<std::promise<void>>();
  std::future<void> answer = answered->get_future();
  boost::asio::post(timers().io, [this, answered] {
    registry_.NextDeadline();
    answered->set_value();
  });
  if (answer.wait_for(bound) == std::future_status::ready) return Status::Ok();
  return UnavailableError("the rendezvous's timer thread or its jobs' lock did not answer within " +
                          std::to_string(bound.count()) + " ms");
}

bool RendezvousService::Idle() const {
  {
    MutexLock lock(sessions_mu_);
    if (!sessions_.empty()) return false;
  }
  return registry_.AllEnded();
}

void RendezvousService::SetChangeCallback(std::function<void()> on_change) {
  MutexLock lock(change_mu_);
  on_change_ = std::move(on_change);
}

}  // namespace ddprun
