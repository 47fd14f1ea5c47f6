// Secret tokens: how ddprun makes one (a store's token, a job's store credential) and how it
// compares one it was shown with one it holds.
#pragma once

#include <string>
#include <string_view>

#include "ddprun/base/status.h"

namespace ddprun {

// 32 random bytes from the kernel (getrandom), as 64 lowercase hex digits. `what` names the
// token in the error, which is one only when the kernel has no randomness to give.
Result<std::string> NewSecretToken(std::string_view what);

// Equality in a time that does not depend on where the strings differ, so a token cannot be
// guessed byte by byte from how long refusals take.
bool SecretsEqual(std::string_view a, std::string_view b);

}  // namespace ddprun
