// How the rendezvous clients retry a server they cannot reach (it may be restarting under a
// running job): the first wait, doubled after each failed try up to the last. One set of
// constants for gRPC's own channel reconnects, the agents' session stream and the store's calls.
#pragma once

#include <algorithm>
#include <chrono>

namespace ddprun {

inline constexpr std::chrono::milliseconds kFirstReconnectBackoff{50};
inline constexpr std::chrono::milliseconds kMaxReconnectBackoff{1'000};

// The wait after `backoff`.
inline std::chrono::milliseconds NextReconnectBackoff(std::chrono::milliseconds backoff) {
  return std::min(backoff * 2, kMaxReconnectBackoff);
}

}  // namespace ddprun
