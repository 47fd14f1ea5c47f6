// WorkerFailure and the report ddprun prints, once, when it gives up: the root cause (the first
// failure observed) and every other worker that failed on its own. Pure formatting.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace ddprun {

struct WorkerFailure {
  std::chrono::system_clock::time_point time;
  std::string host;
  int global_rank = 0;
  int local_rank = 0;
  pid_t pid = -1;
  std::optional<int> exit_code;    // set when the worker exited
  std::optional<int> term_signal;  // set when a signal killed it
  std::string error_file;          // TORCHELASTIC_ERROR_FILE of the worker
  std::string error_file_text;     // what the worker wrote there (empty: nothing)
  std::string spawn_error;         // set when the worker could not even be started
};

// The exit status ddprun takes from a failure: the worker's exit code, or 128 + signal.
int ExitStatusOf(const WorkerFailure& failure);

// "exit code 3" or "signal SIGSEGV (11)".
std::string DescribeExit(const WorkerFailure& failure);

// One line: "rank 3 (local_rank 1) on host h1: exit code 3". What the rendezvous server passes
// to every node as the job's root cause.
std::string DescribeFailure(const WorkerFailure& failure);

// The multi-line report of the round that gave up. `failures` in the order observed on this
// node. `job_root_cause` empty: the first failure is the root cause. Otherwise it is the root
// cause (observed on another node) and `failures` are listed after it as this node's own.
// `program` names what was run (for the title).
std::string FormatFailureReport(const std::string& program,
                                const std::vector<WorkerFailure>& failures, int restarts_used,
                                int max_restarts, const std::string& job_root_cause = "");

}  // namespace ddprun
