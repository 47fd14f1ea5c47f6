// The end-to-end tests' one timing profile. A test that must give real processes real time (an
// agent's heartbeats, a round's last call) takes each figure as a base, what a quiet optimized
// build needs with room to spare, and stretches it by Stretch(): 1 for an optimized build, more
// for an unoptimized one and under the sanitizers (which run everything several times slower),
// times DDPRUN_TEST_STRETCH when set (a machine loaded by other work). The logic behind those
// timeouts is tested on a stepped time, not here.
#pragma once

#include <string>

namespace ddprun::testing {

// The factor every real-time margin of this build is multiplied by.
double Stretch();

// True in a build under a sanitizer, where a test that sweeps large data may sweep less of it:
// under ThreadSanitizer's unoptimized build six all-reduces of 11.4 MiB took 50 s.
bool UnderSanitizer();

// The --rdzv_conf flag of a test job: a short last call, a
// heartbeat timeout a loaded agent still keeps, and `join_timeout` (seconds, before stretching).
std::string QuickRendezvousFlag(double join_timeout_s);

}  // namespace ddprun::testing
