// SkipTest; see skip.h.
#include "support/skip.h"

#include <catch2/catch.hpp>
#include <cstdio>

namespace ddprun::testing {
namespace {
bool skipped = false;
}  // namespace

void SkipTest(const std::string& reason) {
  skipped = true;
  std::printf("skipped: %s\n", reason.c_str());
  std::fflush(stdout);
  WARN("skipped: " << reason);
}

bool AnyTestSkipped() { return skipped; }

}  // namespace ddprun::testing
