// The Catch2 main of every test binary: Catch's own exit status (the number of failed test
// cases), except that a run in which nothing failed and a test called SkipTest exits with
// kSkipExitCode, which CTest reports as skipped (see skip.h).
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "support/skip.h"

int main(int argc, char* argv[]) {
  const int failed = Catch::Session().run(argc, argv);
  if (failed == 0 && ddprun::testing::AnyTestSkipped()) return ddprun::testing::kSkipExitCode;
  return failed;
}
