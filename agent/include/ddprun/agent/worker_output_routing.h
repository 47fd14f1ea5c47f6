// Where each worker's stdout and stderr go (torchrun's --redirects, --tee and
// --local_ranks_filter): to the console, one whole line at a time with the rank's prefix, to the
// worker's log files, or both. A log file that cannot be opened falls back to the console, so
// output is never dropped. Runs on the supervisor's io_context; not thread-safe.
#pragma once

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "ddprun/agent/output_pump.h"

namespace ddprun {

// Which of a worker's streams a setting applies to (torchrun's Std: 0 none, 1 stdout, 2 stderr,
// 3 both).
enum class StdStreams : int { kNone = 0, kStdout = 1, kStderr = 2, kBoth = 3 };

inline bool Includes(StdStreams set, StdStreams stream) {
  return (static_cast<int>(set) & static_cast<int>(stream)) != 0;
}

// A value for every local rank, with per-rank exceptions (torchrun's "3" or "0:1,1:2").
struct PerRankStreams {
  StdStreams all = StdStreams::kNone;
  std::map<int, StdStreams> by_local_rank;

  StdStreams For(int local_rank) const {
    auto it = by_local_rank.find(local_rank);
    return it == by_local_rank.end() ? all : it->second;
  }
  bool Any() const {
    if (all != StdStreams::kNone) return true;
    for (const auto& [rank, streams] : by_local_rank) {
      if (streams != StdStreams::kNone) return true;
    }
    return false;
  }
};

struct OutputRoutingOptions {
  PerRankStreams redirects;                         // to the log files only
  PerRankStreams tee;                               // to the log files and the console
  std::optional<std::set<int>> local_ranks_filter;  // console output of these local ranks only
  // TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, when set, and --role: each line's prefix
  // (log_line_prefix.h).
  std::optional<std::string> line_prefix_template;
  std::string role = "default";
  int console_stdout = STDOUT_FILENO;  // where the console is (the agent's own stdout and stderr)
  int console_stderr = STDERR_FILENO;
};

// The pumps of one worker's two streams.
struct WorkerOutput {
  std::shared_ptr<OutputPump> stdout_pump;
  std::shared_ptr<OutputPump> stderr_pump;
  // Forwards what the pipes hold and closes them: the worker has exited.
  void Finish() {
    if (stdout_pump) stdout_pump->Finish();
    if (stderr_pump) stderr_pump->Finish();
  }
  // Bytes read from both streams so far.
  uint64_t BytesRead() const {
    return (stdout_pump ? stdout_pump->bytes_read() : 0) +
           (stderr_pump ? stderr_pump->bytes_read() : 0);
  }
  // The window was resized: so are the worker's terminals.
  void Resize(const TerminalSize& size) {
    if (stdout_pump) stdout_pump->Resize(size);
    if (stderr_pump) stderr_pump->Resize(size);
  }
};

class OutputRouter {
 public:
  OutputRouter(boost::asio::io_context& io, OutputRoutingOptions options);

  // A line typed at ddprun's terminal ended (it echoed it): the consoles' open lines are over.
  void LineEnteredByUser() {
    console_stdout_->LineEnteredByUser();
    console_stderr_->LineEnteredByUser();
  }

  // Whether the stream `stream` of `local_rank` is shown on the console (and maybe also written
  // to its log file), as --local_ranks_filter, --redirects and --tee say.
  bool ReachesConsole(int local_rank, StdStreams stream) const;
  // What the stream of `local_rank` is given when the console's streams get `console_channel`:
  // a terminal only where the stream reaches the console; a stream that goes to a file only, or
  // nowhere, gets a pipe, so that a program which asks isatty() draws nothing for a file.
  OutputChannel ChannelFor(int local_rank, StdStreams stream, OutputChannel console_channel) const;

  // Starts pumping the worker's output (its descriptors, pipes or terminals as `spawned_as`
  // says, are owned from here on) where the options send the streams of `local_rank`, with
  // console lines prefixed "[rank<global_rank>]: ".
  WorkerOutput Route(int local_rank, int global_rank, const SpawnedWorker& spawned,
                     const SpawnOptions& spawned_as, const std::string& stdout_log,
                     const std::string& stderr_log);

 private:
  std::shared_ptr<OutputPump> Pump(int local_rank, StdStreams stream, int fd, bool terminal,
                                   const std::string& prefix, const std::string& log_file);

  boost::asio::io_context& io_;
  const OutputRoutingOptions options_;
  std::shared_ptr<SharedConsole> console_stdout_;
  std::shared_ptr<SharedConsole> console_stderr_;
};

}  // namespace ddprun
