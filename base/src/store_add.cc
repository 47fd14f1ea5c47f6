// AddToStoredInteger; see store_add.h.
#include "ddprun/base/store_add.h"

#include "ddprun/base/parsing.h"

namespace ddprun {

Result<int64_t> AddToStoredInteger(const std::string* current, int64_t delta,
                                   const std::string& key) {
  int64_t value = 0;
  if (current != nullptr) {
    const auto parsed = ParseInteger<int64_t>(*current);
    if (!parsed) {
      return InvalidArgumentError("store key '" + key +
                                  "' holds a value that is not an integer; add needs one");
    }
    value = *parsed;
  }
  int64_t sum = 0;
  if (__builtin_add_overflow(value, delta, &sum)) {
    return InvalidArgumentError("adding " + std::to_string(delta) + " to store key '" + key +
                                "' overflows a 64-bit integer");
  }
  return sum;
}

}  // namespace ddprun
