// --rdzv_conf: the rendezvous settings users pass as "key=value,key=value" (torchrun's syntax).
// ddprun's keys, in seconds: join_timeout, last_call_timeout, heartbeat_timeout, close_timeout,
// hang_timeout and hang_first_timeout (--hang_timeout's; the flags win).
// torchrun's other keys (keep_alive_interval, keep_alive_max_attempt, timeout,
// read_timeout, is_host, store_type, use_libuv) are accepted and have no effect: ddprun's server
// detects membership and ends jobs itself. Any other key is an error.
#pragma once

#include <string>

#include "ddprun/base/status.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

// Applies `text` over `defaults`. INVALID_ARGUMENT naming the first bad item.
Result<RendezvousSettings> ParseRendezvousConf(const std::string& text,
                                               RendezvousSettings defaults = {});

}  // namespace ddprun
