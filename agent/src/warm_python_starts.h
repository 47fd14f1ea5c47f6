// WarmPythonStarts: the supervisor's use of a PythonPreload (python_preload.h) across a job's
// attempts. It starts the node's interpreter, lets the first attempt wait for its imports,
// hands each attempt the interpreter as its workers' forker while it serves, replaces it when it
// died after serving, and says once, in one warning line, why workers start by exec instead (an
// import failed or started a thread, the interpreter died, a worker's PYTHON* variables differ).
#pragma once

#include <spdlog/logger.h>
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddprun/agent/python_preload.h"

namespace ddprun {

class WarmPythonStarts {
 public:
  // `spec` without its environment, which Begin gives.
  WarmPythonStarts(boost::asio::io_context& io, PythonPreloadSpec spec,
                   std::shared_ptr<spdlog::logger> log);

  // Starts the interpreter with environment `envp`.
  void Begin(std::vector<std::string> envp);
  // Calls `settled` once no interpreter is importing: at once, or when it is ready or failed.
  void WhenSettled(std::function<void()> settled);
  // The forker for an attempt's workers, or null: then they start by exec. Replaces an
  // interpreter that died after serving (it serves the attempts after this one).
  WorkerForker* ForAttempt();
  // The forker for one worker of the attempt: `attempt` when the worker's environment fits it.
  WorkerForker* ForWorker(WorkerForker* attempt, const std::vector<std::string>& envp);
  // Once the attempt's workers are started: replaces an interpreter that died meanwhile.
  void AfterAttempt();
  // The running interpreter's pid, or -1: not a leftover of the workers.
  pid_t pid() const;

 private:
  void Start();
  // When the interpreter has failed: says why and, if it served before, starts another.
  void ReplaceIfFailed();
  void WarnOnce(const std::string& why);

  boost::asio::io_context& io_;
  PythonPreloadSpec spec_;
  std::shared_ptr<spdlog::logger> log_;
  std::unique_ptr<PythonPreload> preload_;
  bool served_ = false;  // the current interpreter was ready once
  bool warned_ = false;
};

}  // namespace ddprun
