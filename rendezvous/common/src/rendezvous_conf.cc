// ParseRendezvousConf; see rendezvous_conf.h.
#include "ddprun/rendezvous/rendezvous_conf.h"

#include <map>
#include <set>

#include "ddprun/base/parsing.h"

namespace ddprun {

Result<RendezvousSettings> ParseRendezvousConf(const std::string& text,
                                               RendezvousSettings defaults) {
  RendezvousSettings settings = defaults;
  const std::map<std::string, std::chrono::milliseconds*> durations = {
      {"join_timeout", &settings.join_timeout},
      {"last_call_timeout", &settings.last_call_timeout},
      {"heartbeat_timeout", &settings.heartbeat_timeout},
      {"close_timeout", &settings.close_timeout},
      {"hang_timeout", &settings.hang.timeout},
      {"hang_first_timeout", &settings.hang.first_timeout}};
  const std::set<std::string> torchrun_only = {"keep_alive_interval",
                                               "keep_alive_max_attempt",
                                               "timeout",
                                               "read_timeout",
                                               "is_host",
                                               "store_type",
                                               "use_libuv"};
  for (const std::string& item : text.empty() ? std::vector<std::string>{} : SplitCommas(text)) {
    const size_t equals = item.find('=');
    if (equals == std::string::npos || equals == 0) {
      return InvalidArgumentError("--rdzv_conf items are key=value, not '" + item + "'");
    }
    const std::string key = item.substr(0, equals);
    const std::string value = item.substr(equals + 1);
    if (torchrun_only.contains(key)) continue;
    auto field = durations.find(key);
    if (field == durations.end()) {
      return InvalidArgumentError("--rdzv_conf: unknown key '" + key +
                                  "'; ddprun knows join_timeout, last_call_timeout, "
                                  "heartbeat_timeout, close_timeout, hang_timeout and "
                                  "hang_first_timeout (seconds)");
    }
    const auto duration = ParseSeconds(value);
    if (!duration || duration->count() == 0) {
      return InvalidArgumentError("--rdzv_conf: " + key +
                                  " must be a positive number of seconds, not '" + value + "'");
    }
    *field->second = *duration;
  }
  return settings;
}

}  // namespace ddprun
