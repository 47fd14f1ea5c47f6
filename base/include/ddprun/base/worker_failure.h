// WorkerFailure: one worker's failure as the agent that saw it records it. The same record goes
// up to the rendezvous server (a structured message, ddprun.v1.WorkerFailure, converted in
// rendezvous/common/src/proto_conversions.cc), comes back to every node as the job's root cause,
// and is what `ddprun status` shows: one definition for the agent, the server and the wire.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace ddprun {

struct WorkerFailure {
  std::chrono::system_clock::time_point time;  // when the agent saw it
  std::string host;
  int global_rank = 0;
  int local_rank = 0;
  pid_t pid = -1;
  std::optional<int> exit_code;    // set when the worker exited
  std::optional<int> term_signal;  // set when a signal killed it
  std::string spawn_error;         // set when the worker could not even be started
  // Set when the worker hung (it was stopped by ddprun for that): what it was doing, as the hang
  // report says, e.g. "no progress for 3.0 s at step 5".
  std::string hang;
  std::string error_file;  // its TORCHELASTIC_ERROR_FILE, a path on `host`
  // What the worker wrote there (empty: nothing), read on `host` for its own report; not sent.
  std::string error_file_text;
  // A hang's evidence, on `host`, for its own report; not sent: the file with the worker's stacks
  // and their innermost frames (or why none could be taken).
  std::string stacks_file;
  std::string stacks_excerpt;
};

// Whether `a` and `b` are the same failure (the same worker seen failing at the same moment),
// whichever node or message they came through.
bool SameFailure(const WorkerFailure& a, const WorkerFailure& b);

// The exit status ddprun takes from a failure: the worker's exit code, or 128 + signal; 1 when
// it could not be started or hung.
int ExitStatusOf(const WorkerFailure& failure);

// "exit code 3", "signal SIGSEGV (11)" or "hung: no progress for 3.0 s at step 5".
std::string DescribeExit(const WorkerFailure& failure);

// "exit code 3" or "signal SIGKILL (9)": how a process reaped with `wait_status` ended, in
// DescribeExit's words.
std::string DescribeWaitStatus(int wait_status);

// One line: "rank 3 (local_rank 1) on host h1: exit code 3".
std::string DescribeFailure(const WorkerFailure& failure);

// "SIGSEGV" for 11; "signal 77" for a number without a name.
std::string SignalName(int signal_number);

}  // namespace ddprun
