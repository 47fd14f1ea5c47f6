// NewSecretToken and SecretsEqual; see secret_token.h.
#include "ddprun/base/secret_token.h"

#include <sys/random.h>

#include <cerrno>

#include "ddprun/base/hex.h"

namespace ddprun {

Result<std::string> NewSecretToken(std::string_view what) {
  unsigned char bytes[32];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    return ErrnoError("getrandom for " + std::string(what), errno);
  }
  return HexEncode(bytes, sizeof(bytes));
}

bool SecretsEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (size_t i = 0; i < a.size(); ++i) difference |= static_cast<unsigned char>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace ddprun
