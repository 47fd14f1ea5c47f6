// EtcdClient; see etcd_client.h.
#include "ddprun/etcd/etcd_client.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/grpc_status.h"
#include "etcd/etcd_v3.grpc.pb.h"

namespace ddprun::etcd {
namespace {

namespace pb = etcdserverpb;

// The metadata key etcd reads an authentication token from.
constexpr char kEtcdTokenKey[] = "token";
// The metadata with which a member without a raft leader refuses a call ("no leader") or ends a
// watch, instead of holding it.
constexpr char kRequireLeaderKey[] = "hasleader";
constexpr char kRequireLeaderValue[] = "true";

// The pauses between rounds of a call over every member: short at first (an election ends in
// about one election timeout), doubling to at most the longest.
constexpr std::chrono::milliseconds kFirstPauseBetweenRounds{25};
constexpr std::chrono::milliseconds kLongestPause{400};

// A member's answer that says "ask another": it is unreachable or slow, or it has no quorum or
// lost its leader (etcd answers those UNAVAILABLE: "etcdserver: no leader", "request timed out").
bool AskAnother(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// etcd's answer to an expired or unknown token (after a member restarts, say): authenticate
// again, once.
bool TokenRefused(const grpc::Status& status) {
  return status.error_message().find("invalid auth token") != std::string::npos;
}

KeyValue FromProto(const pb::KeyValue& kv) {
  return {.key = kv.key(),
          .value = kv.value(),
          .create_revision = kv.create_revision(),
          .mod_revision = kv.mod_revision(),
          .version = kv.version(),
          .lease = kv.lease()};
}

std::shared_ptr<grpc::Channel> OpenMemberChannel(const std::string& endpoint,
                                                 const EtcdSettings& settings) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!settings.ca_pem.empty()) {
    grpc::SslCredentialsOptions tls;
    tls.pem_root_certs = settings.ca_pem;
    tls.pem_cert_chain = settings.cert_pem;
    tls.pem_private_key = settings.key_pem;
    credentials = grpc::SslCredentials(tls);
  }
  grpc::ChannelArguments arguments;
  // Fail a call at once while a member is down instead of waiting out its deadline, and try
  // again soon after it comes back.
  arguments.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  arguments.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(endpoint, credentials, arguments);
}

}  // namespace

std::string PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

// One member's stubs.
struct Member {
  std::string endpoint;
  std::unique_ptr<pb::KV::Stub> kv;
  std::unique_ptr<pb::Lease::Stub> lease;
  std::unique_ptr<pb::Watch::Stub> watch;
  std::unique_ptr<pb::Auth::Stub> auth;
  std::unique_ptr<pb::Maintenance::Stub> maintenance;
};

struct EtcdClient::Members {
  EtcdSettings settings;
  std::vector<Member> members;
  std::atomic<size_t> current{0};  // the member the last answer came from
  Mutex token_mu;
  std::string token GUARDED_BY(token_mu);

  // A member without a raft leader answers at once, so that the call moves on.
  void Prepare(grpc::ClientContext& context, std::chrono::milliseconds timeout) {
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    context.AddMetadata(kRequireLeaderKey, kRequireLeaderValue);
    AddToken(context);
  }

  void AddToken(grpc::ClientContext& context) {
    MutexLock lock(token_mu);
    if (!token.empty()) context.AddMetadata(kEtcdTokenKey, token);
  }

  // One attempt of `call` on `member`, authenticating first where a token is needed, and once
  // more where etcd refused an expired token.
  template <typename Call>
  grpc::Status CallOnce(Member& member, Call& call, std::chrono::milliseconds timeout) {
    grpc::Status status;
    if (NeedsToken()) status = Authenticate(member);
    for (int attempt = 0; status.ok() && attempt < 2; ++attempt) {
      grpc::ClientContext context;
      Prepare(context, timeout);
      status = call(member, context);
      if (status.ok() || settings.user.empty() || !TokenRefused(status)) break;
      status = Authenticate(member);
    }
    return status;
  }

  // Authenticates with `member`; the token then goes with every call.
  grpc::Status Authenticate(Member& member) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + settings.call_timeout);
    pb::AuthenticateRequest request;
    request.set_name(settings.user);
    request.set_password(settings.password);
    pb::AuthenticateResponse response;
    grpc::Status status = member.auth->Authenticate(&context, request, &response);
    if (status.ok()) {
      MutexLock lock(token_mu);
      token = response.token();
    }
    return status;
  }

  bool NeedsToken() {
    if (settings.user.empty()) return false;
    MutexLock lock(token_mu);
    return token.empty();
  }

  // Runs `call(member, context)` on the current member, then on each other one while the answer
  // is "ask another"; the first other answer (success or not) is the call's. When every member
  // said "ask another", goes round again after a pause, until `timeout` has passed since the
  // first attempt: an election (a member restarted, a leader slowed past its timeout) ends in
  // about one election timeout, and a caller should not see it. A retried write may have been
  // applied by the member that did not answer in time: callers make their writes idempotent,
  // or guard them with compares that a second application fails.
  // Each attempt's deadline is `timeout` (the settings' call timeout when zero).
  template <typename Call>
  Status OnSomeMember(const char* what, Call&& call,
                      std::chrono::milliseconds timeout = std::chrono::milliseconds(0)) {
    if (timeout.count() == 0) timeout = settings.call_timeout;
    const auto give_up_at = std::chrono::steady_clock::now() + timeout;
    std::string errors;
    for (auto pause = kFirstPauseBetweenRounds;; pause = std::min(2 * pause, kLongestPause)) {
      errors.clear();
      const size_t first = current.load();
      for (size_t i = 0; i < members.size(); ++i) {
        const size_t index = (first + i) % members.size();
        Member& member = members[index];
        grpc::Status status = CallOnce(member, call, timeout);
        if (status.ok()) {
          current = index;
          return Status();
        }
        if (!AskAnother(status)) {
          current = index;
          Status failure = FromGrpcStatus(status);
          return Status(failure.code(), std::string("etcd ") + what + " at " + member.endpoint +
                                            ": " + status.error_message());
        }
        errors += (errors.empty() ? "" : "; ") + member.endpoint + ": " + status.error_message();
      }
      if (std::chrono::steady_clock::now() + pause >= give_up_at) break;
      std::this_thread::sleep_for(pause);
    }
    return UnavailableError(std::string("etcd ") + what + ": no member answered (" + errors + ")");
  }
};

EtcdClient::EtcdClient(std::unique_ptr<Members> members) : members_(std::move(members)) {}
EtcdClient::~EtcdClient() = default;

Result<std::unique_ptr<EtcdClient>> EtcdClient::Open(EtcdSettings settings) {
  if (settings.endpoints.empty()) return InvalidArgumentError("no etcd endpoint given");
  if (settings.cert_pem.empty() != settings.key_pem.empty()) {
    return InvalidArgumentError(
        "an etcd client certificate needs its key, and a key its certificate");
  }
  auto members = std::make_unique<Members>();
  for (const std::string& endpoint : settings.endpoints) {
    auto channel = OpenMemberChannel(endpoint, settings);
    members->members.push_back({.endpoint = endpoint,
                                .kv = pb::KV::NewStub(channel),
                                .lease = pb::Lease::NewStub(channel),
                                .watch = pb::Watch::NewStub(channel),
                                .auth = pb::Auth::NewStub(channel),
                                .maintenance = pb::Maintenance::NewStub(channel)});
  }
  members->settings = std::move(settings);
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::move(members)));
}

Result<std::optional<KeyValue>> EtcdClient::Get(const std::string& key,
                                                std::chrono::milliseconds timeout) {
  pb::RangeRequest request;
  request.set_key(key);
  pb::RangeResponse response;
  Status status = members_->OnSomeMember(
      "get", [&](Member& m, grpc::ClientContext& c) { return m.kv->Range(&c, request, &response); },
      timeout);
  if (!status.ok()) return status;
  if (response.kvs_size() == 0) return std::optional<KeyValue>();
  return std::optional<KeyValue>(FromProto(response.kvs(0)));
}

Result<RangeRead> EtcdClient::GetPrefix(const std::string& prefix) {
  pb::RangeRequest request;
  request.set_key(prefix);
  request.set_range_end(PrefixEnd(prefix));
  pb::RangeResponse response;
  Status status = members_->OnSomeMember("range", [&](Member& m, grpc::ClientContext& c) {
    return m.kv->Range(&c, request, &response);
  });
  if (!status.ok()) return status;
  RangeRead read;
  read.revision = response.header().revision();
  for (const pb::KeyValue& kv : response.kvs()) read.kvs.push_back(FromProto(kv));
  return read;
}

Result<int64_t> EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  pb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  pb::PutResponse response;
  Status status = members_->OnSomeMember(
      "put", [&](Member& m, grpc::ClientContext& c) { return m.kv->Put(&c, request, &response); });
  if (!status.ok()) return status;
  return response.header().revision();
}

Result<int64_t> EtcdClient::DeletePrefix(const std::string& prefix) {
  pb::DeleteRangeRequest request;
  request.set_key(prefix);
  request.set_range_end(PrefixEnd(prefix));
  pb::DeleteRangeResponse response;
  Status status = members_->OnSomeMember("delete", [&](Member& m, grpc::ClientContext& c) {
    return m.kv->DeleteRange(&c, request, &response);
  });
  if (!status.ok()) return status;
  return response.deleted();
}

Result<TxnOutcome> EtcdClient::Txn(const pb::TxnRequest& request) {
  pb::TxnResponse response;
  Status status = members_->OnSomeMember(
      "txn", [&](Member& m, grpc::ClientContext& c) { return m.kv->Txn(&c, request, &response); });
  if (!status.ok()) return status;
  TxnOutcome outcome;
  outcome.succeeded = response.succeeded();
  outcome.revision = response.header().revision();
  outcome.responses.assign(response.responses().begin(), response.responses().end());
  return outcome;
}

Result<std::optional<KeyChange>> EtcdClient::WaitForChange(const std::string& key,
                                                           int64_t after_revision,
                                                           std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<KeyChange> change;
  Status status = members_->OnSomeMember(
      "watch",
      [&](Member& m, grpc::ClientContext& c) {
        auto stream = m.watch->Watch(&c);
        pb::WatchRequest request;
        request.mutable_create_request()->set_key(key);
        request.mutable_create_request()->set_start_revision(after_revision + 1);
        if (!stream->Write(request)) return stream->Finish();
        pb::WatchResponse response;
        while (!change && stream->Read(&response)) {
          if (response.canceled()) break;  // compacted past after_revision, or refused
          for (const pb::Event& event : response.events()) {
            change = KeyChange{.deleted = event.type() == pb::Event::DELETE,
                               .kv = FromProto(event.kv())};
            break;
          }
        }
        c.TryCancel();
        grpc::Status ended = stream->Finish();
        if (change) return grpc::Status::OK;
        if (response.canceled()) {
          return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                              "watch cancelled: " + response.cancel_reason() +
                                  " (compacted at revision " +
                                  std::to_string(response.compact_revision()) + ")");
        }
        // The wait's own deadline, not a member's failure: no change came.
        if (std::chrono::steady_clock::now() >= deadline) return grpc::Status::OK;
        return ended.ok() ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "watch ended") : ended;
      },
      timeout);
  if (!status.ok()) return status;
  return change;
}

void EtcdClient::WatchStop::Stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  if (context_ != nullptr) static_cast<grpc::ClientContext*>(context_)->TryCancel();
  stopped_changed_.notify_all();
}

bool EtcdClient::WatchStop::stopped() {
  std::lock_guard lock(mu_);
  return stopped_;
}

Status EtcdClient::WatchPrefix(const std::string& prefix, int64_t from_revision,
                               const std::function<void(const KeyChange&)>& on_change,
                               WatchStop& stop) {
  Members& m = *members_;
  int64_t next = from_revision;
  size_t index = m.current.load();
  size_t failed_in_a_row = 0;  // members that ended without a change since the last one
  while (true) {
    Member& member = m.members[index % m.members.size()];
    if (m.NeedsToken()) (void)m.Authenticate(member);
    grpc::ClientContext context;  // no deadline: a watch lasts
    m.AddToken(context);
    // A member that loses its raft leader (cut off from the quorum) ends the watch instead of
    // keeping it open without events: the watch then moves to a member that has one.
    context.AddMetadata(kRequireLeaderKey, kRequireLeaderValue);
    {
      std::lock_guard lock(stop.mu_);
      if (stop.stopped_) return Status();
      stop.context_ = &context;
    }
    auto stream = member.watch->Watch(&context);
    pb::WatchRequest request;
    request.mutable_create_request()->set_key(prefix);
    request.mutable_create_request()->set_range_end(PrefixEnd(prefix));
    request.mutable_create_request()->set_start_revision(next);
    pb::WatchResponse response;
    bool compacted = false;
    bool changed = false;
    if (stream->Write(request)) {
      while (stream->Read(&response)) {
        if (response.canceled()) {
          compacted = response.compact_revision() != 0;
          break;
        }
        for (const pb::Event& event : response.events()) {
          on_change(
              KeyChange{.deleted = event.type() == pb::Event::DELETE, .kv = FromProto(event.kv())});
          next = event.kv().mod_revision() + 1;
          changed = true;
        }
      }
    }
    context.TryCancel();
    (void)stream->Finish();
    {
      std::unique_lock lock(stop.mu_);
      stop.context_ = nullptr;
      if (stop.stopped_) return Status();
      if (compacted) {
        return Status(StatusCode::kOutOfRange,
                      "etcd watch of " + prefix + ": revision " + std::to_string(next) +
                          " was compacted away (oldest kept: " +
                          std::to_string(response.compact_revision()) + ")");
      }
      failed_in_a_row = changed ? 0 : failed_in_a_row + 1;
      // Every member failed in turn: none can serve now. Try again a moment later, at once on
      // Stop.
      if (failed_in_a_row >= m.members.size()) {
        stop.stopped_changed_.wait_for(lock, std::chrono::milliseconds(200),
                                       [&stop] { return stop.stopped_; });
        failed_in_a_row = 0;
      }
    }
    ++index;
  }
}

Result<int64_t> EtcdClient::GrantLease(std::chrono::seconds ttl) {
  pb::LeaseGrantRequest request;
  request.set_ttl(ttl.count());
  pb::LeaseGrantResponse response;
  Status status = members_->OnSomeMember("lease grant", [&](Member& m, grpc::ClientContext& c) {
    return m.lease->LeaseGrant(&c, request, &response);
  });
  if (!status.ok()) return status;
  if (!response.error().empty()) return UnavailableError("etcd lease grant: " + response.error());
  return response.id();
}

Result<int64_t> EtcdClient::KeepLeaseAlive(int64_t lease, std::chrono::milliseconds timeout) {
  pb::LeaseKeepAliveResponse response;
  Status status = members_->OnSomeMember(
      "lease keep-alive",
      [&](Member& m, grpc::ClientContext& c) {
        auto stream = m.lease->LeaseKeepAlive(&c);
        pb::LeaseKeepAliveRequest request;
        request.set_id(lease);
        if (stream->Write(request)) stream->Read(&response);
        stream->WritesDone();
        return stream->Finish();
      },
      timeout);
  if (!status.ok()) return status;
  if (response.ttl() <= 0) {
    return FailedPreconditionError("etcd lease " + std::to_string(lease) + " is gone");
  }
  return response.ttl();
}

Status EtcdClient::RevokeLease(int64_t lease) {
  pb::LeaseRevokeRequest request;
  request.set_id(lease);
  pb::LeaseRevokeResponse response;
  return members_->OnSomeMember("lease revoke", [&](Member& m, grpc::ClientContext& c) {
    return m.lease->LeaseRevoke(&c, request, &response);
  });
}

Result<EtcdClient::MemberReport> EtcdClient::MemberStatus() {
  pb::StatusRequest request;
  pb::StatusResponse response;
  Status status = members_->OnSomeMember("status", [&](Member& m, grpc::ClientContext& c) {
    return m.maintenance->Status(&c, request, &response);
  });
  if (!status.ok()) return status;
  return MemberReport{.description = members_->members[members_->current.load()].endpoint +
                                     " (etcd " + response.version() + ")",
                      .cluster_id = response.header().cluster_id()};
}

}  // namespace ddprun::etcd
