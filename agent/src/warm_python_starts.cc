// WarmPythonStarts; see warm_python_starts.h.
#include "warm_python_starts.h"

#include <cstdio>

namespace ddprun {

WarmPythonStarts::WarmPythonStarts(boost::asio::io_context& io, PythonPreloadSpec spec,
                                   std::shared_ptr<spdlog::logger> log)
    : io_(io), spec_(std::move(spec)), log_(std::move(log)) {}

void WarmPythonStarts::Begin(std::vector<std::string> envp) {
  spec_.envp = std::move(envp);
  Start();
}

void WarmPythonStarts::Start() {
  served_ = false;
  auto started = PythonPreload::Start(io_, spec_);
  if (!started.ok()) {
    WarnOnce(started.status().message());
    return;
  }
  preload_ = std::move(started).value();
  log_->info("python preload: pid {} imports {}", preload_->pid(), spec_.modules.front());
}

void WarmPythonStarts::WhenSettled(std::function<void()> settled) {
  if (!preload_) {
    settled();
    return;
  }
  preload_->WhenSettled(std::move(settled));
}

WorkerForker* WarmPythonStarts::ForAttempt() {
  if (!preload_) return nullptr;
  if (preload_->Serving()) {
    served_ = true;
    return preload_.get();
  }
  ReplaceIfFailed();
  return nullptr;
}

void WarmPythonStarts::AfterAttempt() {
  if (preload_ && !preload_->Serving()) ReplaceIfFailed();
}

void WarmPythonStarts::ReplaceIfFailed() {
  if (preload_->state() != PythonPreload::State::kFailed) return;
  const std::string why = preload_->failure();
  preload_.reset();
  if (!served_) {
    WarnOnce(why);  // it never served: an import failed, and would fail again
    return;
  }
  // It died while serving: the next attempts fork from a new interpreter.
  std::fprintf(stderr,
               "ddprun: warning: --python_preload: %s; starting another, workers start normally "
               "until it is ready\n",
               why.c_str());
  Start();
}

WorkerForker* WarmPythonStarts::ForWorker(WorkerForker* attempt,
                                          const std::vector<std::string>& envp) {
  if (attempt == nullptr || !preload_) return nullptr;
  if (preload_->Fits(envp)) return attempt;
  WarnOnce("a worker's PYTHON* environment differs from the preloading interpreter's");
  return nullptr;
}

pid_t WarmPythonStarts::pid() const { return preload_ ? preload_->pid() : -1; }

void WarmPythonStarts::WarnOnce(const std::string& why) {
  if (warned_) return;
  warned_ = true;
  std::fprintf(stderr, "ddprun: warning: --python_preload: %s; the workers start normally\n",
               why.c_str());
}

}  // namespace ddprun
