// StoreClient; see store_client.h.
#include "ddprun/rendezvous/store_client.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdio>
#include <thread>

#include "client_channel.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/security_files.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/worker_environment_contract.h"
#include "ddprun/rendezvous/grpc_status.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"
#include "reconnect_backoff.h"

namespace ddprun {

namespace {

// One stub per listed server; calls go to `current` first, and move on when it is unreachable.
struct StoreServers {
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<v1::Rendezvous::Stub>> stubs;
  std::atomic<size_t> current{0};
};

// Prefixes a failed call's message with what was being done, and where.
Status Describe(const grpc::Status& status, const std::string& what, const std::string& address) {
  if (status.ok()) return Status::Ok();
  Status converted = FromGrpcStatus(status);
  std::string message =
      what + " at the rendezvous store " + address + " failed: " + converted.message();
  return {converted.code(), message};
}

Result<std::string> RequireEnv(const worker_env::Variable& variable) {
  auto value = worker_env::Lookup(variable);
  if (!value) {
    return InvalidArgumentError(std::string(variable.name) +
                                " is not set; run this program under ddprun, or set it");
  }
  return *value;
}

}  // namespace

struct StoreClient::Impl {
  StoreServers servers;
};

Result<std::unique_ptr<StoreClient>> StoreClient::FromEnvironment() {
  StoreClientOptions options;
  ASSIGN_OR_RETURN(options.address, RequireEnv(worker_env::kStoreAddr));
  ASSIGN_OR_RETURN(options.job_id, RequireEnv(worker_env::kJobId));
  ASSIGN_OR_RETURN(const std::string round, RequireEnv(worker_env::kRound));
  const auto parsed_round = ParseInteger<int64_t>(round, 0);
  if (!parsed_round) {
    return InvalidArgumentError("DDPRUN_ROUND must be a non-negative integer, not '" + round + "'");
  }
  options.round = *parsed_round;
  options.security.token = worker_env::Lookup(worker_env::kToken).value_or("");
  RETURN_IF_ERROR(ReadWorkerTlsFiles(worker_env::Lookup(worker_env::kTlsCa).value_or(""),
                                     worker_env::Lookup(worker_env::kTlsCert).value_or(""),
                                     worker_env::Lookup(worker_env::kTlsKey).value_or(""),
                                     options.security));
  return Connect(options);
}

std::unique_ptr<StoreClient> StoreClient::Connect(const StoreClientOptions& options) {
  return std::unique_ptr<StoreClient>(new StoreClient(options));
}

StoreClient::StoreClient(StoreClientOptions options)
    : options_(std::move(options)), impl_(std::make_unique<Impl>()) {
  StoreServers& servers = impl_->servers;
  for (const std::string& entry : SplitCommas(options_.address)) {
    if (std::string address = Trim(entry); !address.empty()) servers.addresses.push_back(address);
  }
  if (servers.addresses.empty()) servers.addresses.push_back(options_.address);
  for (const std::string& address : servers.addresses) {
    servers.stubs.push_back(
        v1::Rendezvous::NewStub(OpenRendezvousChannel(address, options_.security)));
  }
}

StoreClient::~StoreClient() = default;

namespace {

// A context with the token and a deadline.
std::unique_ptr<grpc::ClientContext> MakeContext(const StoreClientOptions& options,
                                                 std::chrono::milliseconds timeout) {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(std::chrono::system_clock::now() + timeout);
  AddToken(*context, options.security);
  return context;
}

template <typename Request>
Request Scoped(const StoreClientOptions& options) {
  Request request;
  request.mutable_scope()->set_job_id(options.job_id);
  request.mutable_scope()->set_round(options.round);
  return request;
}

// One unary call, with the token and a deadline; errors say what was being done, and where.
// A server that is unreachable (UNAVAILABLE) is left for the next listed one at once; when none
// answers, the round is tried again, with backoff, for options.retry_timeout. A call that reached
// a server that then failed may have been applied there, as on any retry (an Add counts twice).
template <typename Request, typename Response>
Status Call(StoreServers& servers,
            grpc::Status (v1::Rendezvous::Stub::*rpc)(grpc::ClientContext*, const Request&,
                                                      Response*),
            const StoreClientOptions& options, const Request& request, Response& response,
            const std::string& what, std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + options.retry_timeout;
  auto backoff = kFirstReconnectBackoff;
  const size_t count = servers.stubs.size();
  while (true) {
    grpc::Status status;
    size_t server = servers.current.load();
    for (size_t tried = 0; tried < count; ++tried, server = (server + 1) % count) {
      auto context = MakeContext(options, timeout);
      status = (servers.stubs[server].get()->*rpc)(context.get(), request, &response);
      if (status.error_code() != grpc::StatusCode::UNAVAILABLE) break;
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) servers.current.store(server);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        std::chrono::steady_clock::now() + backoff > give_up) {
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE && options.retry_timeout.count()) {
        char retried[48];
        std::snprintf(retried, sizeof(retried), " (retried for %.1f s)",
                      static_cast<double>(options.retry_timeout.count()) / 1000);
        status = grpc::Status(status.error_code(), status.error_message() + retried);
      }
      return Describe(status, what,
                      status.error_code() == grpc::StatusCode::UNAVAILABLE && count > 1
                          ? options.address
                          : servers.addresses[server]);
    }
    std::this_thread::sleep_for(backoff);  // the servers may be restarting
    backoff = NextReconnectBackoff(backoff);
  }
}

}  // namespace

Status StoreClient::Set(const std::string& key, const std::string& value) {
  auto request = Scoped<v1::SetRequest>(options_);
  request.set_key(key);
  request.set_value(value);
  v1::SetResponse response;
  return Call(impl_->servers, &v1::Rendezvous::Stub::Set, options_, request, response,
              "set '" + key + "'", options_.rpc_timeout);
}

Result<std::string> StoreClient::Get(const std::string& key) {
  auto request = Scoped<v1::GetRequest>(options_);
  request.set_key(key);
  v1::GetResponse response;
  RETURN_IF_ERROR(Call(impl_->servers, &v1::Rendezvous::Stub::Get, options_, request, response,
                       "get '" + key + "'", options_.rpc_timeout));
  return std::move(*response.mutable_value());
}

Status StoreClient::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto request = Scoped<v1::WaitRequest>(options_);
  for (const auto& key : keys) request.add_keys(key);
  request.set_timeout_ms(timeout.count());
  v1::WaitResponse response;
  return Call(impl_->servers, &v1::Rendezvous::Stub::Wait, options_, request, response,
              "wait for " + std::to_string(keys.size()) + " key(s)",
              timeout + options_.rpc_timeout);
}

Result<int64_t> StoreClient::Add(const std::string& key, int64_t delta) {
  auto request = Scoped<v1::AddRequest>(options_);
  request.set_key(key);
  request.set_delta(delta);
  v1::AddResponse response;
  RETURN_IF_ERROR(Call(impl_->servers, &v1::Rendezvous::Stub::Add, options_, request, response,
                       "add to '" + key + "'", options_.rpc_timeout));
  return response.value();
}

Result<StoreCompareSetOutcome> StoreClient::CompareSet(const std::string& key,
                                                       const std::string& expected,
                                                       const std::string& desired) {
  auto request = Scoped<v1::CompareSetRequest>(options_);
  request.set_key(key);
  request.set_expected(expected);
  request.set_desired(desired);
  v1::CompareSetResponse response;
  RETURN_IF_ERROR(Call(impl_->servers, &v1::Rendezvous::Stub::CompareSet, options_, request,
                       response, "compare_set '" + key + "'", options_.rpc_timeout));
  return StoreCompareSetOutcome{std::move(*response.mutable_value()), response.swapped()};
}

Result<bool> StoreClient::Delete(const std::string& key) {
  auto request = Scoped<v1::DeleteRequest>(options_);
  request.set_key(key);
  v1::DeleteResponse response;
  RETURN_IF_ERROR(Call(impl_->servers, &v1::Rendezvous::Stub::Delete, options_, request, response,
                       "delete '" + key + "'", options_.rpc_timeout));
  return response.deleted();
}

}  // namespace ddprun
