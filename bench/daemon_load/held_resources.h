// What the load generator holds open on the daemon, for the probes of its memory and through
// the mix: many session streams (callback API) joined to jobs, and pending waits on many keys;
// and the daemon's count of jobs and its settled memory.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "ddprun/base/client_security.h"
#include "load_basics.h"

namespace ddprun::daemon_load {

// Many streams in one job: callback-API sessions, joined and held.
class HeldSession final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::ServerEvent> {
 public:
  HeldSession(v1::Rendezvous::Stub& stub, const Options& options, v1::AgentMessage join)
      : join_(std::move(join)) {
    if (!options.token.empty()) context_.AddMetadata(ddprun::kTokenMetadataKey, options.token);
    context_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
    stub.async()->Session(&context_, this);
    StartWrite(&join_);
    StartRead(&event_);
    StartCall();
  }
  void Cancel() { context_.TryCancel(); }
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(mu_);
    written_ = ok;
    write_done_ = true;
    cv_.notify_all();
  }
  void OnReadDone(bool ok) override {
    if (ok && event_.has_round_ready()) ready_ = true;
    if (ok) StartRead(&event_);
  }
  void OnDone(const grpc::Status& status) override {
    std::lock_guard lock(mu_);
    status_ = status;
    done_ = true;
    cv_.notify_all();
  }
  bool AwaitWritten() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return write_done_ || done_; });
    return written_;
  }
  grpc::Status AwaitDone() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(60), [this] { return done_; });
    return done_ ? status_ : grpc::Status(grpc::StatusCode::UNKNOWN, "not done after 60 s");
  }
  bool ready() const { return ready_; }

 private:
  grpc::ClientContext context_;
  v1::AgentMessage join_;
  v1::ServerEvent event_;
  std::atomic<bool> ready_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool write_done_ = false;
  bool written_ = false;
  bool done_ = false;
  grpc::Status status_;
};

struct HeldSessions {
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::Rendezvous::Stub>> stubs;
  std::vector<std::unique_ptr<HeldSession>> sessions;

  // `joins[i]` on channel i % 16; returns how many joins were written.
  int Open(const Options& options, const std::string& tag, std::vector<v1::AgentMessage> joins) {
    for (int c = 0; c < 16; ++c) {
      channels.push_back(NewChannel(options, tag + std::to_string(c)));
      stubs.push_back(v1::Rendezvous::NewStub(channels.back()));
    }
    for (size_t i = 0; i < joins.size(); ++i) {
      sessions.push_back(
          std::make_unique<HeldSession>(*stubs[i % stubs.size()], options, std::move(joins[i])));
    }
    int written = 0;
    for (auto& session : sessions) written += session->AwaitWritten() ? 1 : 0;
    return written;
  }
  // Cancels every session; returns how many ended other than CANCELLED (should be 0).
  int Close(std::string& example) {
    for (auto& session : sessions) session->Cancel();
    int other = 0;
    for (auto& session : sessions) {
      grpc::Status status = session->AwaitDone();
      if (status.error_code() != grpc::CANCELLED) {
        ++other;
        if (example.empty()) {
          example = std::string(CodeName(status.error_code())) + ": " + status.error_message();
        }
      }
    }
    sessions.clear();
    stubs.clear();
    channels.clear();
    return other;
  }
  int Ready() const {
    int n = 0;
    for (auto& session : sessions) n += session->ready() ? 1 : 0;
    return n;
  }
};

struct HeldWaits {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Rendezvous::Stub> stub;
  std::vector<std::unique_ptr<PendingWait>> waits;
  std::mutex mu;
  std::condition_variable cv;
  int done = 0;
  std::map<std::string, int> endings;

  void Open(const Options& options, int count, int keys) {
    channel = NewChannel(options, "held-waits");
    stub = v1::Rendezvous::NewStub(channel);
    for (int w = 0; w < count; ++w) {
      auto wait = std::make_unique<PendingWait>();
      if (!options.token.empty())
        wait->context.AddMetadata(ddprun::kTokenMetadataKey, options.token);
      wait->context.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
      wait->request.mutable_scope()->set_job_id("held-waits");
      for (int k = 0; k < keys; ++k) {
        char key[80];
        std::snprintf(key, sizeof(key), "held-wait-%06d-key-%06d-%040d", w, k, 0);
        wait->request.add_keys(key);
      }
      wait->request.set_timeout_ms(24LL * 3600 * 1000);
      stub->async()->Wait(&wait->context, &wait->request, &wait->response,
                          [this](grpc::Status status) {
                            std::lock_guard lock(mu);
                            ++endings[CodeName(status.error_code())];
                            ++done;
                            cv.notify_all();
                          });
      waits.push_back(std::move(wait));
    }
  }
  std::map<std::string, int> Close() {
    for (auto& wait : waits) wait->context.TryCancel();
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(60),
                [this] { return done == static_cast<int>(waits.size()); });
    auto result = endings;
    lock.unlock();
    if (done == static_cast<int>(waits.size())) waits.clear();  // else leaked: the process ends
    return result;
  }
};

// `options.crowd` joins of distinct nodes to the job `job_id` (min = max = 2).
std::vector<v1::AgentMessage> CrowdJoins(const Options& options, const std::string& job_id);

// The jobs DescribeJobs lists (`job_id` empty: every job); their nodes into `nodes` when given.
// -1 when the call fails.
long CountJobs(const Options& options, const std::string& job_id, long* nodes);

// RSS after the daemon has settled for a moment, in KiB.
long SettledRss(const Options& options, int settle_ms = 1500);

}  // namespace ddprun::daemon_load
