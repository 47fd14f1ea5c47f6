// ProgressMonitor over a real progress page and a real progress file: what counts as progress.
#include "ddprun/agent/progress_monitor.h"

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
