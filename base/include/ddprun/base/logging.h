// Logging: one named spdlog logger per component ("agent", "rendezvous", ...), writing to stderr
// with the pid in every line. DDPRUN_LOG_LEVEL (trace, debug, info, warn, error, off; default
// warn) sets the level of every logger. Thread-safe; call from any thread.
#pragma once

#include <spdlog/logger.h>

#include <memory>
#include <string>

namespace ddprun {

// The logger named `component`, created on first use.
std::shared_ptr<spdlog::logger> GetLogger(const std::string& component);

}  // namespace ddprun
