// OwnLoopbackAddress; see own_loopback_address.h.
#include "support/own_loopback_address.h"

#include <unistd.h>

namespace ddprun::testing {

std::string OwnLoopbackAddress(int slot) {
  const auto pid = static_cast<unsigned>(::getpid());
  const unsigned a = 128 + ((pid >> 14) & 0x7f);
  const unsigned b = (pid >> 6) & 0xff;
  const unsigned c = (pid & 0x3f) * 4 + (static_cast<unsigned>(slot) & 3);
  return "127." + std::to_string(a) + "." + std::to_string(b) + "." + std::to_string(c);
}

}  // namespace ddprun::testing
