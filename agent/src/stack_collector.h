// Collecting hung workers' stacks before they are stopped: the evidence a hang report quotes.
// - Native stacks of every thread: gdb in batch mode, when it is installed and may attach (it
//   says why not otherwise: not installed, or ptrace refused, with the kernel's ptrace_scope).
// - Python stacks of every thread, for a worker that armed ddprun's Python hook
//   (python_hook.h): it is signalled and its faulthandler dumps them. A stopped worker
//   (SIGSTOP) cannot run the handler; that is said instead.
// Each worker's go to its stacks file, with a heading; the excerpt is the innermost frames of
// its main thread (Python's first), for the failure report. Blocking (gdb takes a second or
// two a process): StackCollection runs it on a thread of its own and reports to the loop.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ddprun {

struct StackRequest {
  pid_t pid = -1;
  std::string heading;            // first line of the file: the hang and the rank
  std::string stacks_file;        // written (replaced)
  std::string python_stacks_dir;  // where the hook dumps; empty: not a Python worker
};

struct CollectedStacks {
  std::string stacks_file;
  std::string excerpt;  // innermost frames, one per line, or why there are none
};

// "ddprun: stacks of rank 3: FILE" and the excerpt, indented: what the console shows.
std::string FormatForConsole(int global_rank, const CollectedStacks& stacks);

// Collects the stacks of every request, in parallel; each within `timeout`.
std::vector<CollectedStacks> CollectStacks(const std::vector<StackRequest>& requests,
                                           std::chrono::milliseconds timeout);

// One collection in the background. `done` runs on `io` with the result, unless the collection
// is destroyed first (which waits for the thread: bounded by the timeout). Made and destroyed on
// the thread that runs `io`.
class StackCollection {
 public:
  StackCollection(boost::asio::io_context& io, std::vector<StackRequest> requests,
                  std::chrono::milliseconds timeout,
                  std::function<void(std::vector<CollectedStacks>)> done);
  ~StackCollection();
  StackCollection(const StackCollection&) = delete;
  StackCollection& operator=(const StackCollection&) = delete;

 private:
  std::shared_ptr<bool> alive_;  // false once destroyed: a result posted late is dropped
  std::thread thread_;
};

}  // namespace ddprun
