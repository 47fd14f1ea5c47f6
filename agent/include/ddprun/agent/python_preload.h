// PythonPreload: warm Python workers (--python_preload). One interpreter per node, started with
// the workers' interpreter, options and environment, imports the named modules (torch) once and
// then forks every worker of every attempt, so that a restart costs a fork instead of an
// interpreter's start and its imports. Its program is agent/python/python_preload.py, which
// states the protocol; each worker it forks is set up as process_spawn.h sets up a worker it
// execs (process group or terminal session, parent-death signal, streams, the inherited page,
// working directory), then becomes the program: its argv, __main__, environment.
//
// The interpreter runs in the job's cgroup like the workers, is this process's child, and holds
// none of the workers' descriptors once they are started. It ends when this object does. Where
// it cannot serve (a module fails to import, an import starts a thread or initializes CUDA, the
// interpreter dies), state() says so and why, and workers are started by exec as without it.
//
// Requires this process to be a child subreaper (leftover_sweep.h): a forked worker's parent
// is the process that was its grandparent's nearest subreaper.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status.h"

namespace ddprun {

struct PythonPreloadSpec {
  // The workers' interpreter and its options, as their command line has them ({python3, -u}).
  std::vector<std::string> interpreter;
  bool module = false;  // the workers run `-m program`
  std::string program;  // the script's path (as the workers are given it), or the module's name
  std::vector<std::string> modules;  // imported before the first fork
  // The interpreter's environment: what the workers inherit, less what differs by rank.
  std::vector<std::string> envp;
  // The cgroup and working directory the workers get (the interpreter's own output goes to
  // this process's stderr; it reads /dev/null).
  SpawnOptions spawn;
};

class PythonPreload final : public WorkerForker {
 public:
  // Starts the interpreter, which imports while the caller goes on. An error when it cannot be
  // started at all (no subreaper, no interpreter).
  static Result<std::unique_ptr<PythonPreload>> Start(boost::asio::io_context& io,
                                                      PythonPreloadSpec spec);
  // Closes the socket (the interpreter then exits), kills it if it has not within a second, and
  // reaps it.
  ~PythonPreload() override;
  PythonPreload(const PythonPreload&) = delete;
  PythonPreload& operator=(const PythonPreload&) = delete;

  enum class State { kImporting, kReady, kFailed };
  State state() const { return state_; }
  // kFailed: why, in one line.
  const std::string& failure() const { return failure_; }
  // The interpreter's pid while it runs (the leftover sweep spares it), else -1.
  pid_t pid() const { return pid_; }

  // Calls `settled` once the state is no longer kImporting: at once if it is not, else from the
  // io_context once the interpreter has answered or died.
  void WhenSettled(std::function<void()> settled);
  // kReady and still running; else records why not (kFailed). Reaps an interpreter that died.
  bool Serving();
  // Whether a worker with environment `envp` may be forked: every variable the interpreter reads
  // at its start (PYTHON*) is as it was given.
  bool Fits(const std::vector<std::string>& envp) const;

  Status Send(const ForkedStart& start) override;
  Result<pid_t> Collect() override;

 private:
  explicit PythonPreload(PythonPreloadSpec spec);
  void OnReadable();
  void Fail(std::string why);
  // Waits for the interpreter (up to `bound`, then SIGKILL) and describes how it ended.
  std::string Reap(int bound_ms);

  struct Watch;
  PythonPreloadSpec spec_;
  State state_ = State::kImporting;
  std::string failure_;
  pid_t pid_ = -1;
  int pidfd_ = -1;
  int control_fd_ = -1;
  std::unique_ptr<Watch> watch_;
  std::vector<std::function<void()>> waiting_;
};

// The environment variables an interpreter reads as it starts: those Fits compares.
bool ReadByInterpreterAtStart(const std::string& entry);

}  // namespace ddprun
