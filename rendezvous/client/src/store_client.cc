// StoreClient; see store_client.h.
#include "ddprun/rendezvous/store_client.h"

#include <grpcpp/grpcpp.h>

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

struct StoreClient::Impl {
  std::unique_ptr<v1::Rendezvous::Stub> stub;
};

namespace {

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
  impl_->stub = v1::Rendezvous::NewStub(OpenRendezvousChannel(options_.address, options_.security));
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

// One unary call of the stub, with the token and a deadline; errors say what was being done.
template <typename Request, typename Response>
Status Call(v1::Rendezvous::Stub& stub,
            grpc::Status (v1::Rendezvous::Stub::*rpc)(grpc::ClientContext*, const Request&,
                                                      Response*),
            const StoreClientOptions& options, const Request& request, Response& response,
            const std::string& what, std::chrono::milliseconds timeout) {
  const auto give_up = std::chrono::steady_clock::now() + options.retry_timeout;
  auto backoff = kFirstReconnectBackoff;
  while (true) {
    auto context = MakeContext(options, timeout);
    grpc::Status status = (stub.*rpc)(context.get(), request, &response);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE ||
        std::chrono::steady_clock::now() + backoff > give_up) {
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE && options.retry_timeout.count()) {
        char retried[48];
        std::snprintf(retried, sizeof(retried), " (retried for %.1f s)",
                      static_cast<double>(options.retry_timeout.count()) / 1000);
        status = grpc::Status(status.error_code(), status.error_message() + retried);
      }
      return Describe(status, what, options.address);
    }
    std::this_thread::sleep_for(backoff);  // the server may be restarting
    backoff = NextReconnectBackoff(backoff);
  }
}

}  // namespace

Status StoreClient::Set(const std::string& key, const std::string& value) {
  auto request = Scoped<v1::SetRequest>(options_);
  request.set_key(key);
  request.set_value(value);
  v1::SetResponse response;
  return Call(*impl_->stub, &v1::Rendezvous::Stub::Set, options_, request, response,
              "set '" + key + "'", options_.rpc_timeout);
}

Result<std::string> StoreClient::Get(const std::string& key) {
  auto request = Scoped<v1::GetRequest>(options_);
  request.set_key(key);
  v1::GetResponse response;
  RETURN_IF_ERROR(Call(*impl_->stub, &v1::Rendezvous::Stub::Get, options_, request, response,
                       "get '" + key + "'", options_.rpc_timeout));
  return std::move(*response.mutable_value());
}

Status StoreClient::Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  auto request = Scoped<v1::WaitRequest>(options_);
  for (const auto& key : keys) request.add_keys(key);
  request.set_timeout_ms(timeout.count());
  v1::WaitResponse response;
  return Call(*impl_->stub, &v1::Rendezvous::Stub::Wait, options_, request, response,
              "wait for " + std::to_string(keys.size()) + " key(s)",
              timeout + options_.rpc_timeout);
}

Result<int64_t> StoreClient::Add(const std::string& key, int64_t delta) {
  auto request = Scoped<v1::AddRequest>(options_);
  request.set_key(key);
  request.set_delta(delta);
  v1::AddResponse response;
  RETURN_IF_ERROR(Call(*impl_->stub, &v1::Rendezvous::Stub::Add, options_, request, response,
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
  RETURN_IF_ERROR(Call(*impl_->stub, &v1::Rendezvous::Stub::CompareSet, options_, request, response,
                       "compare_set '" + key + "'", options_.rpc_timeout));
  return StoreCompareSetOutcome{std::move(*response.mutable_value()), response.swapped()};
}

Result<bool> StoreClient::Delete(const std::string& key) {
  auto request = Scoped<v1::DeleteRequest>(options_);
  request.set_key(key);
  v1::DeleteResponse response;
  RETURN_IF_ERROR(Call(*impl_->stub, &v1::Rendezvous::Stub::Delete, options_, request, response,
                       "delete '" + key + "'", options_.rpc_timeout));
  return response.deleted();
}

}  // namespace ddprun
