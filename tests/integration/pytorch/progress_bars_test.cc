// tqdm progress bars on several ranks at once, as ordinary training scripts draw them
// (tests/pytorch/tqdm_bars.py), at a terminal and through a pipe: no redraw leaves an empty line,
// and every rank's finished bar shows.
#include <algorithm>
#include <catch2/catch.hpp>

#include "integration/launcher/launcher_test_support.h"
#include "pytorch_support.h"
#include "support/terminal_process.h"

using namespace ddprun::testing;

namespace {

// False, after SkipTest saying how to get it, when the interpreter has no tqdm.
bool HaveTqdm() {
  if (!HavePytorch()) return false;
  if (Run({PythonWithTorch(), "-c", "import tqdm"}).code() == 0) return true;
  SkipTest(
      "python3 here has no tqdm; install it with apt-get install python3-tqdm "
      "(./run.sh test does)");
  return false;
}

std::vector<std::string> BarsOn(int ranks, bool lines) {
  std::vector<std::string> argv = {"--nproc_per_node=" + std::to_string(ranks),
                                   Script("tqdm_bars.py")};
  if (lines) argv.push_back("--lines");
  return Ddprun(argv);
}

// `console`: what ddprun showed of the bars of `ranks` ranks.
void CheckBars(const std::string& console, int ranks) {
  INFO(console.substr(0, 3000));
  CHECK(EmptyLines(console) == 0);
  const auto shown = LastDrawn(console);
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string finished =
        "[rank" + std::to_string(rank) + "]: bar of rank " + std::to_string(rank) + ": 100%";
    CHECK(std::count_if(shown.begin(), shown.end(), [&](const std::string& line) {
            return line.rfind(finished, 0) == 0;
          }) >= 1);  // tqdm draws 100% twice: another rank may write between
  }
}

}  // namespace

TEST_CASE(
    "tqdm bars on three ranks through a pipe leave no empty line, and each finished bar shows") {
  if (!HaveTqdm()) return;
  auto result = Run(BarsOn(3, /*lines=*/true), PytorchEnv(), 120s);
  REQUIRE(result.code() == 0);
  CheckBars(result.err, 3);
  CHECK(Count(result.err, "[rank1]: rank 1 says 190\n") == 1);
}

TEST_CASE("tqdm bars on two ranks at a terminal leave no empty line, and each finished bar shows") {
  if (!HaveTqdm()) return;
  std::vector<std::string> argv = PytorchEnvPrefix();
  for (const auto& arg : BarsOn(2, /*lines=*/false)) argv.push_back(arg);
  TerminalProcess ddprun(argv);
  auto exit = ddprun.Wait(120s);
  REQUIRE(exit);
  CHECK(exit->exit_code == 0);
  CheckBars(ddprun.screen(), 2);
}
