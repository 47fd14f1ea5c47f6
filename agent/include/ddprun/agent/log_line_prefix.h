// The prefix of each line of a worker's output on the console: "[rank<global rank>]: ", or what
// --log_line_prefix_template or TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE says, filled in as torchrun
// fills it (Python's string.Template.safe_substitute): ${rank} or $rank is the global rank,
// ${local_rank} the local one, ${role_name} the role (--role), ${hostname} the host's name
// (gethostname, as torchrun 2.x's); "$$" is one "$"; any other "$" stays as written. Like
// torchrun's, a template's prefix is put before the line as it is, with no space added.
#pragma once

#include <optional>
#include <string>

namespace ddprun {

// The variable torchrun reads the template from.
inline constexpr const char kLogLinePrefixTemplateVariable[] =
    "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE";

std::string LogLinePrefix(const std::optional<std::string>& prefix_template, int global_rank,
                          int local_rank, const std::string& role);

}  // namespace ddprun
