// The hang detection flags; see hang_options.h.
#include "hang_options.h"

#include "ddprun/base/parsing.h"
#include "ddprun/base/straggler_watch.h"

namespace ddprun {

std::vector<FlagSpec> HangFlags(HangOptions& options) {
  return {
      {.name = "--hang_timeout",
       .help =
           "Seconds a rank may go without progress before the job counts as hung: its stacks are "
           "collected, then the group restarts (0 or unset: off)",
       .target = &options.timeout},
      {.name = "--hang_first_timeout",
       .help =
           "Seconds a rank may take to its first progress (start-up, loading data); default: the "
           "larger of --hang_timeout and 300",
       .target = &options.first_timeout},
      {.name = "--hang_action",
       .help = "On a hang: restart (stacks, then a restart within --max_restarts), stacks (report "
               "only; "
               "the job runs on) or fail (stacks, then the job fails)",
       .target = &options.action,
       .choices = {"restart", "stacks", "fail"},
       .show_default = true},
      {.name = "--hang_progress",
       .help =
           "What counts as progress: reported (collectives, steps, writes to DDPRUN_PROGRESS_FILE) "
           "or output (that, and any output of the worker)",
       .target = &options.progress,
       .choices = {"reported", "output"},
       .show_default = true},
      {.name = "--straggler_ratio",
       .help =
           "Name a rank whose steps take this many times the job's median (its own time, waits in "
           "collectives left out), and again when it recovers; 0: off. Default: 1.5 with "
           "--hang_timeout, else off",
       .target = &options.straggler_ratio},
  };
}

Status ResolveHangOptions(const HangOptions& options, HangSettings& settings) {
  const std::pair<const char*, const std::string*> given[] = {
      {"--hang_timeout", &options.timeout}, {"--hang_first_timeout", &options.first_timeout}};
  std::chrono::milliseconds* fields[] = {&settings.timeout, &settings.first_timeout};
  for (size_t i = 0; i < 2; ++i) {
    const std::string& text = *given[i].second;
    if (text.empty()) continue;
    const auto seconds = ParseSeconds(text);
    if (!seconds) {
      return InvalidArgumentError(std::string(given[i].first) +
                                  " must be a number of seconds, 0 or more, not '" + text + "'");
    }
    *fields[i] = *seconds;
  }
  settings.action = ParseHangAction(options.action).value_or(HangSettings::Action::kRestart);
  settings.output_is_progress = options.progress == "output";
  if (options.straggler_ratio.empty()) {
    settings.straggler_ratio = settings.enabled() ? StragglerWatch::kDefaultRatio : 0;
    return Status::Ok();
  }
  const auto ratio = ParseNumber(options.straggler_ratio);
  if (!ratio || !(*ratio == 0 || (*ratio > 1 && *ratio <= 1e6))) {
    return InvalidArgumentError("--straggler_ratio must be 0 (off) or a number above 1, not '" +
                                options.straggler_ratio + "'");
  }
  settings.straggler_ratio = *ratio;
  return Status::Ok();
}

}  // namespace ddprun
