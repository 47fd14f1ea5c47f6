// The key-value stores' add rule, one definition for the rendezvous server's store and the
// runtime's in-memory one: a key holds an integer as decimal text, and add sums into it.
#pragma once

#include <cstdint>
#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

// The integer `current` holds (0 when it is null: the key is unset) plus `delta`.
// INVALID_ARGUMENT naming `key` when it holds something else or the sum overflows 64 bits.
Result<int64_t> AddToStoredInteger(const std::string* current, int64_t delta,
                                   const std::string& key);

}  // namespace ddprun
