// ProgressMonitor over a real progress page and a real progress file: what counts as progress.
#include "progress_monitor.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "support/child_process.h"

using namespace ddprun;
using namespace ddprun::testing;
using namespace std::chrono_literals;

namespace {

struct Monitored {
  explicit Monitored(bool output_is_progress) : monitor(output_is_progress) {
    monitor.Reset(1);
    auto fd = monitor.Prepare(0, dir / "progress");
    REQUIRE(fd.ok());
    auto mapping = ProgressPageMapping::Map(*fd);  // the worker's side
    REQUIRE(mapping.ok());
    worker_page = std::move(mapping).value();
    monitor.Started(0, start);
  }
  RankProgress At(std::chrono::milliseconds since_start, uint64_t output_bytes = 0) {
    RankProgress rank;
    monitor.Sample(0, output_bytes, start + since_start, rank);
    return rank;
  }
  void WriteFile(const std::string& text) { std::ofstream(dir / "progress") << text; }

  ScratchDir dir;
  ProgressMonitor monitor;
  ProgressPageMapping worker_page;
  ProgressMonitor::Clock::time_point start = ProgressMonitor::Clock::now();
};

}  // namespace

TEST_CASE("the runtime's counters in the page are progress, and say whether a collective is open") {
  Monitored m(false);
  auto rank = m.At(1s);
  CHECK_FALSE(rank.progressed);
  CHECK(rank.idle == 1s);
  CHECK(rank.step == -1);
  m.worker_page.page()->collectives_issued.fetch_add(1);
  rank = m.At(2s);
  CHECK(rank.progressed);
  CHECK(rank.idle == 0s);
  CHECK(rank.in_collective);
  CHECK(rank.collectives == 1);
  m.worker_page.page()->collectives_completed.fetch_add(1);
  m.worker_page.page()->step.store(7);
  rank = m.At(3s);
  CHECK_FALSE(rank.in_collective);
  CHECK(rank.step == 7);
  CHECK(m.At(4500ms).idle == 1500ms);
}

TEST_CASE(
    "a page that says its worker destroyed its group marks the rank finished, until it "
    "forms one again") {
  Monitored m(false);
  CHECK_FALSE(m.At(1s).finished);
  m.worker_page.page()->finished_ns.store(1);
  CHECK(m.At(2s).finished);
  m.worker_page.page()->finished_ns.store(0);
  CHECK_FALSE(m.At(3s).finished);
}

TEST_CASE("any write to the progress file is progress, and a number there is the step") {
  Monitored m(false);
  m.WriteFile("");
  auto rank = m.At(1s);
  CHECK(rank.progressed);
  CHECK(rank.step == -1);
  CHECK(m.At(2s).idle == 1s);
  m.WriteFile("41\n");
  rank = m.At(3s);
  CHECK(rank.idle == 0s);
  CHECK(rank.step == 41);
}

TEST_CASE("output is progress only when asked") {
  Monitored ignored(false);
  CHECK_FALSE(ignored.At(1s, 100).progressed);
  Monitored counted(true);
  CHECK(counted.At(1s, 100).progressed);
  CHECK(counted.At(2s, 100).idle == 1s);
}

TEST_CASE("a descriptor that is not a progress page is refused") {
  ScratchDir dir;
  std::ofstream(dir / "plain") << std::string(8192, 'x');
  const int fd = ::open((dir / "plain").c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  auto mapping = ProgressPageMapping::Map(fd);
  ::close(fd);
  CHECK(mapping.status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("steps are timed by the times the page says they were reported, less the waits") {
  Monitored m(false);
  ProgressPage* page = m.worker_page.page();
  const auto reported = [&](std::chrono::milliseconds since_start) {
    return static_cast<uint64_t>(
        std::chrono::nanoseconds((m.start + since_start).time_since_epoch()).count());
  };
  RankProgress rank;
  // A step every 100 ms, 60 of which waiting in collectives; sampled every 350 ms.
  for (int64_t step = 0; step <= StepTimer::kWindowSteps + 2; ++step) {
    page->collective_wait_ns.store(static_cast<uint64_t>(step) * 60'000'000);
    page->step_reported_ns.store(reported(step * 100ms));
    page->step.store(step);
    if (step % 3 == 0) rank = m.At(step * 100ms + 350ms);
  }
  CHECK(rank.step_time == 40ms);
}

TEST_CASE("a progress file's steps are timed by the samples") {
  Monitored m(false);
  RankProgress rank;
  for (int64_t step = 0; step <= StepTimer::kWindowSteps; ++step) {
    // Each write a different size: two writes within one tick of the file system's clock are
    // otherwise the same to a stat.
    m.WriteFile(std::string(static_cast<size_t>(step), ' ') + std::to_string(step) + "\n");
    rank = m.At(step * 200ms);
  }
  CHECK(rank.step_time == 200ms);
}
