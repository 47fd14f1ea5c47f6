// RouteGrpcLogsToDebug; see grpc_logging.h.
#include "ddprun/rendezvous/grpc_logging.h"

#include <grpc/support/log.h>

#include "ddprun/base/logging.h"

namespace ddprun {
namespace {

void LogAtDebug(gpr_log_func_args* args) {
  GetLogger("grpc")->debug("{}:{}: {}", args->file, args->line, args->message);
}

}  // namespace

void RouteGrpcLogsToDebug() {
  // gRPC's own threshold (GRPC_VERBOSITY, errors by default) still decides what it formats.
  gpr_set_log_function(LogAtDebug);
}

}  // namespace ddprun
