// The hang and straggler detection flags: --hang_timeout, --hang_first_timeout, --hang_action,
// --hang_progress and --straggler_ratio, each also read from its PET_* variable. --hang_timeout and
// --hang_first_timeout may also come in --rdzv_conf; a flag (or its variable) wins.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/flag_spec.h"
#include "ddprun/base/hang_finder.h"
#include "ddprun/base/status.h"

namespace ddprun {

struct HangOptions {
  std::string timeout;        // seconds; empty: not given
  std::string first_timeout;  // seconds; empty: not given
  std::string action = "restart";
  std::string progress = "reported";
  std::string straggler_ratio;  // empty: not given (1.5 with a hang timeout, else off)
};

// The flags, filling `options`.
std::vector<FlagSpec> HangFlags(HangOptions& options);

// Applies the flags given over `settings` (what --rdzv_conf said). INVALID_ARGUMENT with a
// one-line message for a value that is not a number of seconds, a ratio that is not 0 or above
// 1, or an unknown word.
Status ResolveHangOptions(const HangOptions& options, HangSettings& settings);

}  // namespace ddprun
