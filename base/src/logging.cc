// Named stderr loggers; see logging.h.
#include "ddprun/base/logging.h"

#include <errno.h>  // program_invocation_short_name
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdlib>

#include "ddprun/base/thread_annotations.h"

namespace ddprun {
namespace {

std::atomic<LogLineForm> line_form{LogLineForm::kTerminal};

// The %* of a terminal line: its level and ": ", as ddprun's own notices write it ("warning: ",
// "error: "), and nothing at info, whose lines are notices.
class LevelWord final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& message, const std::tm&,
              spdlog::memory_buf_t& out) override {
    if (message.level == spdlog::level::info) return;
    const spdlog::string_view_t name = message.level == spdlog::level::critical
                                           ? spdlog::string_view_t("error")
                                           : spdlog::level::to_string_view(message.level);
    out.append(name.data(), name.data() + name.size());
    static constexpr char kAfter[] = ": ";
    out.append(kAfter, kAfter + sizeof(kAfter) - 1);
  }
  std::unique_ptr<spdlog::custom_flag_formatter> clone() const override {
    return std::make_unique<LevelWord>();
  }
};

std::unique_ptr<spdlog::formatter> LineFormatter() {
  if (line_form.load() == LogLineForm::kTimestamped) {
    return std::make_unique<spdlog::pattern_formatter>(
        "[%Y-%m-%d %H:%M:%S.%e] [%n pid %P] %^%l%$: %v");
  }
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<LevelWord>('*');
  formatter->set_pattern(std::string(program_invocation_short_name) + ": %^%*%$%v");
  return formatter;
}

}  // namespace

void SetLogLineForm(LogLineForm form) { line_form.store(form); }

std::shared_ptr<spdlog::logger> GetLogger(const std::string& component) {
  static Mutex creation_mu;  // spdlog's registry refuses a second logger of the same name
  MutexLock lock(creation_mu);
  if (auto existing = spdlog::get(component)) return existing;
  auto logger = spdlog::stderr_color_mt(component);
  logger->set_formatter(LineFormatter());
  const char* level = std::getenv("DDPRUN_LOG_LEVEL");
  logger->set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
  return logger;
}

}  // namespace ddprun
