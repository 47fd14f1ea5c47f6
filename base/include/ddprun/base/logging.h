// Logging: one named spdlog logger per component ("agent", "rendezvous", ...), writing to
// stderr. DDPRUN_LOG_LEVEL (trace, debug, info, warn, error, off; default warn) sets the level of
// every logger. Thread-safe; call from any thread.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

namespace ddprun {

// How a logger's lines read. kTerminal, the default, is the one form of every line ddprun writes
// where a user reads it, its own notices' (srun's too): "PROGRAM: MESSAGE" at info,
// "PROGRAM: LEVEL: MESSAGE" at the others ("ddprun: warning: rank 1 (pid 42) failed: ...";
// critical reads "error"). kTimestamped is a daemon's log, whose lines a journal keeps:
// "[2026-12-07 10:00:00.123] [COMPONENT pid N] LEVEL: MESSAGE".
enum class LogLineForm { kTerminal, kTimestamped };

// Chooses the form of the loggers made from now on: call it before the first GetLogger.
void SetLogLineForm(LogLineForm form);

// The logger named `component`, created on first use.
std::shared_ptr<spdlog::logger> GetLogger(const std::string& component);

}  // namespace ddprun
