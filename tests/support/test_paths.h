// Where this build's programs under test and the source folders the tests read are. Defined in a
// source file generated into the build folder (test_paths.cc.in), not passed as compile
// definitions: those would put the clone's absolute paths on every test file's command line, and
// ccache, which makes such paths relative only in -I options, could not reuse one clone's objects
// in another (a CI run builds a fresh clone).
#pragma once

namespace ddprun::testing::paths {

extern const char* const kDdprun;
extern const char* const kNetworkLauncher;  // libexec/ddprun/ddprun, which ddprun runs
extern const char* const kDdprund;
extern const char* const kTestWorker;
extern const char* const kCollectivesWorker;
extern const char* const kHelloStore;
extern const char* const kTrainExample;
extern const char* const kClassifyExample;
extern const char* const kSourceDir;       // the repository
extern const char* const kTestWorkersDir;  // tests/workers
extern const char* const kPytorchScripts;  // tests/pytorch
// The interpreter of the pinned torch (tests/pytorch/torch_pin.txt) that ./run.sh test installs,
// as configured by DDPRUN_TEST_TORCH_PYTHON; "" when the build was configured without one.
extern const char* const kTorchPython;

}  // namespace ddprun::testing::paths
