// HangResponse; see hang_response.h.
#include "hang_response.h"

#include <unistd.h>

#include <cstdio>

#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"

namespace ddprun {

HangResponse::HangResponse(boost::asio::io_context& io, std::string host,
                           HangSettings::Action action, std::chrono::milliseconds stacks_timeout,
                           Callbacks callbacks)
    : io_(io),
      host_(std::move(host)),
      action_(action),
      stacks_timeout_(stacks_timeout),
      callbacks_(std::move(callbacks)) {}

HangResponse::~HangResponse() = default;

void HangResponse::Respond(const std::string& description, std::vector<HungWorker> hung) {
  if (collection_) return;
  found_ = true;
  if (hung.empty()) {
    GetLogger("agent")->warn("{}", description);  // another node's ranks: that node collects
    return;
  }
  std::vector<StackRequest> requests;
  for (const HungWorker& worker : hung) {
    requests.push_back({worker.pid,
                        description + "\nrank " + std::to_string(worker.progress.global_rank) +
                            " (local " + std::to_string(worker.index) + ", pid " +
                            std::to_string(worker.pid) + ") on host " + host_,
                        worker.dir + "/stacks.txt", worker.dir});
  }
  std::fprintf(stderr, "ddprun: %s; collecting the stacks of %zu hung worker(s)\n",
               description.c_str(), requests.size());
  collection_ = std::make_unique<StackCollection>(
      io_, std::move(requests), stacks_timeout_,
      [this, hung = std::move(hung)](std::vector<CollectedStacks> stacks) {
        OnCollected(hung, stacks);
      });
}

bool HangResponse::DeferStop() {
  if (!collection_) return false;
  stop_deferred_ = true;
  return true;
}

void HangResponse::OnCollected(const std::vector<HungWorker>& hung,
                               const std::vector<CollectedStacks>& stacks) {
  // `hung` is the posted handler's copy, which outlives the collection.
  collection_.reset();
  std::string printed;
  for (size_t i = 0; i < hung.size(); ++i) {
    printed += FormatForConsole(hung[i].progress.global_rank, stacks[i]);
  }
  (void)WriteAll(STDERR_FILENO, printed, "the hang's stacks to stderr");
  std::vector<HungFailure> failures;
  if (action_ != HangSettings::Action::kStacks) {
    for (size_t i = 0; i < hung.size(); ++i) {
      failures.push_back({hung[i].index, DescribeStall(hung[i].progress), stacks[i]});
    }
  }
  if (stop_deferred_) {
    stop_deferred_ = false;
    callbacks_.stop_released();
    return;
  }
  callbacks_.decided(std::move(failures));
}

}  // namespace ddprun
