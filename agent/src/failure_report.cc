// Failure report formatting; see failure_report.h.
#include "ddprun/agent/failure_report.h"

#include <ctime>

#include "worker_error_file.h"

namespace ddprun {
namespace {

std::string FormatTime(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  const auto millis =
      std::chrono::duration_cast<std::chrono::milliseconds>(time.time_since_epoch()).count() % 1000;
  std::tm local{};
  ::localtime_r(&seconds, &local);
  char text[64];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  char with_millis[80];
  std::snprintf(with_millis, sizeof(with_millis), "%s.%03lld", text,
                static_cast<long long>(millis));
  return with_millis;
}

// Each line of `text`, indented by four spaces.
void AppendIndented(std::string& out, std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out += "    " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
}

void AppendFailure(std::string& out, const WorkerFailure& failure) {
  out += "  time       : " + FormatTime(failure.time) + "\n";
  out += "  host       : " + failure.host + "\n";
  out += "  rank       : " + std::to_string(failure.global_rank) + " (local_rank " +
         std::to_string(failure.local_rank) + ")\n";
  if (!failure.spawn_error.empty()) {
    out += "  error      : could not start: " + failure.spawn_error + "\n";
    return;
  }
  out += "  pid        : " + std::to_string(failure.pid) + "\n";
  out += "  exit       : " + DescribeExit(failure) + "\n";
  if (!failure.hang.empty()) {
    out += "  stacks     : " + (failure.stacks_file.empty() ? "<not saved>" : failure.stacks_file) +
           "\n";
    if (!failure.stacks_excerpt.empty()) AppendIndented(out, failure.stacks_excerpt);
    return;
  }
  if (failure.error_file_text.empty()) {
    out += "  error_file : <none written> (see TORCHELASTIC_ERROR_FILE to record the error)\n";
    return;
  }
  out += "  error_file : " + failure.error_file + "\n";
  const WorkerError error = ParseWorkerErrorFile(failure.error_file_text);
  if (error.message.empty()) {
    AppendIndented(out, error.raw);
    return;
  }
  out += "  error      : " + error.message + "\n";
  if (!error.traceback.empty()) {
    out += "  traceback  :\n";
    AppendIndented(out, error.traceback);
  }
}

}  // namespace

std::string FormatFailureReport(const std::string& program,
                                const std::vector<WorkerFailure>& failures, int restarts_used,
                                int max_restarts, const std::string& job_root_cause) {
  const std::string rule(72, '=');
  std::string out = rule + "\n" + program + " FAILED\n" +
                    "restarts used: " + std::to_string(restarts_used) + " of " +
                    std::to_string(max_restarts) + "\n" + rule + "\n";
  if (!job_root_cause.empty()) {
    out += "Root cause (from the rendezvous server): " + job_root_cause + "\n";
    if (!failures.empty()) {
      out += "Failures on this node:\n";
      for (const auto& failure : failures) {
        out += "  ----\n";
        AppendFailure(out, failure);
      }
    }
    out += rule + "\n";
    return out;
  }
  if (failures.empty()) return out;
  out += "Root cause (first observed failure):\n";
  AppendFailure(out, failures.front());
  if (failures.size() > 1) {
    out += "Other failures:\n";
    for (size_t i = 1; i < failures.size(); ++i) {
      out += "  ----\n";
      AppendFailure(out, failures[i]);
    }
  }
  out += rule + "\n";
  return out;
}

}  // namespace ddprun
