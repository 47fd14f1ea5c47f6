// OwnLoopbackAddress: a loopback address no other running test uses, for a real server a test
// starts at its usual fixed port (etcd's 2379, Prometheus's 9090) instead of a port probed free
// and handed on. 127.A.B.C with A, B and C made from the test process's pid and `slot` (0-3):
// C carries the pid's low 6 bits and the slot, B the next 8, A (128 and up, away from 127.0.0.x)
// the next 7. CTest runs one test case per process, so no two running tests share one.
#pragma once

#include <string>

namespace ddprun::testing {

std::string OwnLoopbackAddress(int slot);

}  // namespace ddprun::testing
