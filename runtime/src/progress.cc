// ddp progress reporting; see ddp/progress.h.
#include "ddp/progress.h"

#include "ddprun/base/logging.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/progress_page.h"
#include "ddprun/base/worker_environment_contract.h"

namespace ddp {
namespace {

// The page DDPRUN_PROGRESS_FD names, mapped on first use; null when there is none. The mapping
// lives as long as the process (workers count until they exit).
ddprun::ProgressPage* Page() {
  static ddprun::ProgressPage* const page = []() -> ddprun::ProgressPage* {
    const auto text = ddprun::worker_env::Lookup(ddprun::worker_env::kProgressFd);
    if (!text || text->empty()) return nullptr;
    const auto fd = ddprun::ParseInteger<int>(*text, 0, 1 << 20);
    if (!fd) {
      ddprun::GetLogger("runtime")->warn(
          "DDPRUN_PROGRESS_FD='{}' is not a descriptor; progress "
          "is not reported",
          *text);
      return nullptr;
    }
    auto mapping = ddprun::ProgressPageMapping::Map(*fd);
    if (!mapping.ok()) {
      ddprun::GetLogger("runtime")->warn("progress is not reported: {}",
                                         mapping.status().message());
      return nullptr;
    }
    static ddprun::ProgressPageMapping kept = std::move(mapping).value();
    return kept.page();
  }();
  return page;
}

}  // namespace

void ReportStep(int64_t step) {
  if (auto* page = Page()) page->step.store(step, std::memory_order_relaxed);
}

namespace progress_internal {

void CollectiveIssued() {
  if (auto* page = Page()) page->collectives_issued.fetch_add(1, std::memory_order_relaxed);
}

void CollectiveCompleted() {
  if (auto* page = Page()) page->collectives_completed.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace progress_internal
}  // namespace ddp
