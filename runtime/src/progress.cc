// ddp progress reporting; see ddp/progress.h.
#include "ddp/progress.h"

#include <time.h>

#include <atomic>

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

uint64_t MonotonicNanoseconds() {
  struct timespec now {};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(now.tv_nsec);
}

// Collectives started and not finished, and since when one has been: the page's
// collective_wait_ns grows by each stretch of time during which this count is not 0. Two
// collectives crossing on two threads may shift a stretch's edge by the time between them.
std::atomic<uint64_t> pending_collectives{0};
std::atomic<uint64_t> pending_since_ns{0};

}  // namespace

void ReportStep(int64_t step) {
  auto* page = Page();
  if (page == nullptr) return;
  page->step_reported_ns.store(MonotonicNanoseconds(), std::memory_order_relaxed);
  page->step.store(step, std::memory_order_release);
}

namespace progress_internal {

void CollectiveIssued() {
  auto* page = Page();
  if (page == nullptr) return;
  if (pending_collectives.fetch_add(1, std::memory_order_acq_rel) == 0) {
    pending_since_ns.store(MonotonicNanoseconds(), std::memory_order_release);
  }
  page->collectives_issued.fetch_add(1, std::memory_order_relaxed);
}

void CollectiveCompleted() {
  auto* page = Page();
  if (page == nullptr) return;
  if (pending_collectives.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    const uint64_t since = pending_since_ns.load(std::memory_order_acquire);
    const uint64_t now = MonotonicNanoseconds();
    if (now > since) page->collective_wait_ns.fetch_add(now - since, std::memory_order_relaxed);
  }
  page->collectives_completed.fetch_add(1, std::memory_order_relaxed);
}

void GroupFormed() {
  if (auto* page = Page()) page->finished_ns.store(0, std::memory_order_relaxed);
}

void GroupDestroyed() {
  if (auto* page = Page())
    page->finished_ns.store(MonotonicNanoseconds(), std::memory_order_relaxed);
}

}  // namespace progress_internal
}  // namespace ddp
