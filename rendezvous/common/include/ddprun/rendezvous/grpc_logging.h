// gRPC's own log lines (its internals: a port another process won, a connection retried) go to
// ddprun's log at debug level instead of straight to stderr, where users read them as failures.
// What matters reaches ddprun's code as a status and is reported there, in ddprun's words.
#pragma once

namespace ddprun {

// Process-wide; call once, early in main.
void RouteGrpcLogsToDebug();

}  // namespace ddprun
