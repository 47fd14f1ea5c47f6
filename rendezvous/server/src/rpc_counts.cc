// RpcCounts; see rpc_counts.h.
#include "rpc_counts.h"

#include <array>

namespace ddprun {
namespace {

// Counts the call's code when its status is about to be sent, and lets every hook go on.
class CountingInterceptor final : public grpc::experimental::Interceptor {
 public:
  CountingInterceptor(RpcCounts& counts, const char* method) : counts_(counts), method_(method) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      counts_.Add(method_, static_cast<int>(methods->GetSendStatus().error_code()));
    }
    methods->Proceed();
  }

 private:
  RpcCounts& counts_;
  const char* const method_;
};

class CountingInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CountingInterceptorFactory(RpcCounts& counts) : counts_(counts) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    // None for a bidirectional stream (the agents' Session): an interceptor runs on each of its
    // messages, which at 16k agents slowed a round by a fifth and a re-join by half
    // (bench/rendezvous_scale.py); the service counts each Session itself when it ends.
    if (info->type() == grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING) return nullptr;
    return new CountingInterceptor(counts_, info->method());
  }

 private:
  RpcCounts& counts_;
};

}  // namespace

void RpcCounts::Add(const char* full_method, int code) {
  MutexLock lock(mu_);
  ++calls_[{full_method == nullptr ? "" : full_method, code}];
}

std::vector<RpcCounts::Count> RpcCounts::Snapshot() const {
  std::vector<Count> counts;
  MutexLock lock(mu_);
  for (const auto& [key, calls] : calls_) {
    const std::string& full = key.first;  // "/service/method"
    const size_t slash = full.rfind('/');
    Count count;
    count.service = slash == std::string::npos || slash == 0 ? "" : full.substr(1, slash - 1);
    count.method = slash == std::string::npos ? full : full.substr(slash + 1);
    count.code = GrpcCodeName(key.second);
    count.calls = calls;
    counts.push_back(std::move(count));
  }
  return counts;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> RpcCounts::Interceptors(
    RpcCounts& counts) {
  return std::make_unique<CountingInterceptorFactory>(counts);
}

const char* GrpcCodeName(int code) {
  static constexpr std::array<const char*, 17> kNames = {"OK",
                                                         "CANCELLED",
                                                         "UNKNOWN",
                                                         "INVALID_ARGUMENT",
                                                         "DEADLINE_EXCEEDED",
                                                         "NOT_FOUND",
                                                         "ALREADY_EXISTS",
                                                         "PERMISSION_DENIED",
                                                         "RESOURCE_EXHAUSTED",
                                                         "FAILED_PRECONDITION",
                                                         "ABORTED",
                                                         "OUT_OF_RANGE",
                                                         "UNIMPLEMENTED",
                                                         "INTERNAL",
                                                         "UNAVAILABLE",
                                                         "DATA_LOSS",
                                                         "UNAUTHENTICATED"};
  return code >= 0 && code < static_cast<int>(kNames.size()) ? kNames[static_cast<size_t>(code)]
                                                             : "UNKNOWN";
}

}  // namespace ddprun
