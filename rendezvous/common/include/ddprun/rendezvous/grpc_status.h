// Conversions between ddprun::Status and grpc::Status (the codes are numbered alike).
#pragma once

#include <grpcpp/support/status.h>

#include "ddprun/base/status.h"

namespace ddprun {

inline grpc::Status ToGrpcStatus(const Status& status) {
  return {static_cast<grpc::StatusCode>(status.code()), status.message()};
}

inline Status FromGrpcStatus(const grpc::Status& status) {
  return {static_cast<StatusCode>(status.error_code()), status.error_message()};
}

}  // namespace ddprun
