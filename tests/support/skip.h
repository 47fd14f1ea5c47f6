// Skipping a test that cannot run here (no GPU, no root for network namespaces, no torch), so
// that CTest reports it as skipped with its reason, never as passed.
//
// A test case calls `return SkipTest("why");` before any check. The reason is printed at once
// and kept as a Catch warning; the test binary's main (catch_main.cc) then exits with
// kSkipExitCode when no test failed, and every CTest entry declares that code as
// SKIP_RETURN_CODE (tests/CMakeLists.txt). CTest runs one test case per process, so the skip
// belongs to exactly that test case.
#pragma once

#include <string>

namespace ddprun::testing {

// Automake's and CTest's conventional "skipped" exit status.
constexpr int kSkipExitCode = 77;

// Records that the running test case cannot run here, and why. Not thread-safe: call from the
// test's own thread.
void SkipTest(const std::string& reason);

// Whether SkipTest was called in this process.
bool AnyTestSkipped();

}  // namespace ddprun::testing
