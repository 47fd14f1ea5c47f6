// HangResponse: what a node does about a hang the coordinator found in the job. It collects the
// stacks of this node's hung workers (StackCollection, bounded by its timeout), prints them, and
// then says, through `decided`, which of them fail: every one, or none with
// --hang_action=stacks. While it collects, the debugger holds the workers still: the supervisor
// samples no progress, and a stop of the group waits for it (DeferStop), so that the evidence is
// taken before the workers are signalled.
#pragma once

#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddprun/base/hang_finder.h"
#include "stack_collector.h"

namespace ddprun {

// One hung worker of this node.
struct HungWorker {
  size_t index = 0;  // the supervisor's, its local rank
  pid_t pid = -1;
  RankProgress progress;  // as the coordinator saw it
  std::string dir;        // where its stacks go
};

// A hung worker that fails, with its evidence.
struct HungFailure {
  size_t index = 0;
  std::string stall;  // DescribeStall of its progress
  CollectedStacks stacks;
};

class HangResponse {
 public:
  struct Callbacks {
    // The workers that fail of the hang (empty with --hang_action=stacks).
    std::function<void(std::vector<HungFailure>)> decided;
    // A stop that waited for the collection may go ahead.
    std::function<void()> stop_released;
  };

  HangResponse(boost::asio::io_context& io, std::string host, HangSettings::Action action,
               std::chrono::milliseconds stacks_timeout, Callbacks callbacks);
  ~HangResponse();

  // Collects the stacks of `hung` (this node's live hung workers; none: another node's hang,
  // logged). Ignored while a collection runs.
  void Respond(const std::string& description, std::vector<HungWorker> hung);
  // True while stacks are being collected.
  bool collecting() const { return collection_ != nullptr; }
  // A stop asked for while collecting: released once the stacks are in. False: none runs, stop
  // now.
  bool DeferStop();
  // Whether a hang of this node's workers was found (its stacks are in the run's log directory).
  bool found() const { return found_; }

 private:
  void OnCollected(const std::vector<HungWorker>& hung, const std::vector<CollectedStacks>& stacks);

  boost::asio::io_context& io_;
  const std::string host_;
  const HangSettings::Action action_;
  const std::chrono::milliseconds stacks_timeout_;
  Callbacks callbacks_;
  std::unique_ptr<StackCollection> collection_;
  bool stop_deferred_ = false;
  bool found_ = false;
};

}  // namespace ddprun
