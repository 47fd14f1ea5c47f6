// RpcCounts: the calls a rendezvous server has answered, by method and status code, counted by
// a gRPC server interceptor when each call's status is sent (a stream's once, when it ends), but
// for bidirectional streams (Session), which their service counts (an interceptor would run on
// every message). The server installs it only when its metrics are served: otherwise calls pay
// nothing for it.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "ddprun/base/thread_annotations.h"

namespace ddprun {

class RpcCounts {
 public:
  struct Count {
    std::string service;  // "ddprun.v1.Rendezvous"
    std::string method;   // "Set"
    std::string code;     // "OK", "UNAUTHENTICATED", ... as gRPC names them
    uint64_t calls = 0;
  };

  // `full_method` as gRPC gives it: "/ddprun.v1.Rendezvous/Set". Any thread.
  void Add(const char* full_method, int code) EXCLUDES(mu_);
  // Every (method, code) seen so far, sorted.
  std::vector<Count> Snapshot() const EXCLUDES(mu_);

  // An interceptor factory for grpc::ServerBuilder::experimental().SetInterceptorCreators that
  // counts into `counts`, which must outlive the server.
  static std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> Interceptors(
      RpcCounts& counts);

 private:
  mutable Mutex mu_;
  // By the method's name as gRPC holds it (one string per registered method) and the code.
  std::map<std::pair<std::string, int>, uint64_t> calls_ GUARDED_BY(mu_);
};

// gRPC's name of a status code: "OK", "DEADLINE_EXCEEDED", ...; "UNKNOWN" for other numbers.
const char* GrpcCodeName(int code);

}  // namespace ddprun
