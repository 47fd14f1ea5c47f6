// Named stderr loggers; see logging.h.
#include "ddprun/base/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "ddprun/base/thread_annotations.h"

namespace ddprun {

std::shared_ptr<spdlog::logger> GetLogger(const std::string& component) {
  static Mutex creation_mu;  // spdlog's registry refuses a second logger of the same name
  MutexLock lock(creation_mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n pid %P] %^%l%$: %v");
  const char* level = std::getenv("DDPRUN_LOG_LEVEL");
  logger->set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  return logger;
}

}  // namespace ddprun
