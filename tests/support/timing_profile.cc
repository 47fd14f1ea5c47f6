#include "support/timing_profile.h"

#include <cstdlib>
#include <string>

namespace ddprun::testing {
namespace {

// How much slower this build runs the processes of a test than an optimized one, as seen on two
// loaded cores: AddressSanitizer's unoptimized build about 3x, ThreadSanitizer's about 5x.
constexpr double BuildFactor() {
#if defined(__SANITIZE_THREAD__)
  return 5;
#elif defined(__SANITIZE_ADDRESS__)
  return 3;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
  return 5;
#elif __has_feature(address_sanitizer)
  return 3;
#else
  return 1;
#endif
#else
  return 1;
#endif
}

std::string Seconds(double seconds) {
  std::string text = std::to_string(seconds);  // "%f": never an exponent
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

double Stretch() {
  double factor = BuildFactor();
  if (const char* load = std::getenv("DDPRUN_TEST_STRETCH"); load != nullptr) {
    char* end = nullptr;
    const double value = std::strtod(load, &end);
    if (end != load && *end == '\0' && value >= 1) factor *= value;  // else ignored
  }
  return factor;
}

bool UnderSanitizer() { return BuildFactor() > 1; }

std::string QuickRendezvousFlag(double join_timeout_s) {
  const double stretch = Stretch();
  return "--rdzv_conf=last_call_timeout=" + Seconds(0.3 * stretch) +
         ",heartbeat_timeout=" + Seconds(1 * stretch) +
         ",join_timeout=" + Seconds(join_timeout_s * stretch);
}

}  // namespace ddprun::testing
