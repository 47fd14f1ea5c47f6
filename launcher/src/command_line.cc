// ParseCommandLine; see command_line.h.
#include "command_line.h"

#include <cstdlib>

#include "ddprun/base/flag_parser.h"
#include "raw_options.h"
#include "slurm_flags.h"
#include "submit_resolution.h"

namespace ddprun {
namespace {

constexpr std::string_view kSynopsis = "ddprun [OPTIONS] PROGRAM [ARGS...]";
constexpr std::string_view kDescription =
    "Start and supervise the workers of a data-parallel job on this node.\n"
    "Options as torchrun spells them (--nproc_per_node or --nproc-per-node; each also read from "
    "PET_<NAME>).\nEverything after PROGRAM is passed to it verbatim.";
constexpr std::string_view kFooter =
    "A .py PROGRAM runs as `python3 -u PROGRAM` (PYTHON_EXEC overrides the interpreter); "
    "anything else is executed.\nExit status: 0 when every worker exited 0; the root-cause "
    "worker's exit code (128+N for signal N) otherwise; 2 for usage errors.";

UsageError SeeHelp(const Status& error) {
  return UsageError{error.message() + " (see ddprun --help)"};
}

}  // namespace

ParsedCommandLine ParseCommandLine(const std::vector<std::string>& args) {
  RawOptions raw;
  const FlagParser parser(CommandSpec{.synopsis = kSynopsis,
                                      .description = kDescription,
                                      .footer = kFooter,
                                      .flags = FlagTable(raw),
                                      .program_follows = true});
  auto parsed = parser.Parse(args);
  if (!parsed.ok()) return SeeHelp(parsed.status());
  if (parsed->help) return HelpRequest{parser.Help()};
  if (raw.version) return VersionRequest{};
  raw.node_rank_given = parsed->Given("--node_rank");
  raw.master_addr_given = parsed->Given("--master_addr");
  // A daemon's agent (its environment says so) runs its node; given these it would submit the
  // job again.
  if (std::getenv("DDPRUN_HOSTED_JOB") != nullptr) {
    for (const char* submitter_only : {"--hosts", "--hostfile", "--detach", "--export"}) {
      if (parsed->Given(submitter_only)) {
        return UsageError{std::string(submitter_only) +
                          " is the submitter's option, not a hosted job's agent's"};
      }
    }
  }
  if (!raw.hosts.empty() || !raw.hostfile.empty()) {
    auto submit = ResolveSubmit(raw, parser, *parsed);
    if (!submit.ok()) return UsageError{submit.status().message()};
    return std::move(submit).value();
  }
  for (const char* submit_only : {"--detach", "--export"}) {
    if (parsed->Given(submit_only)) {
      return UsageError{std::string(submit_only) + " is for jobs on many hosts; give --hosts"};
    }
  }
  auto slurm = ApplySlurmStep(*parsed, raw);
  if (!slurm.ok()) return UsageError{slurm.status().message()};
  auto config = Resolve(raw, parsed->program);
  if (!config.ok()) return UsageError{config.status().message()};
  if (const std::optional<SlurmStep>& step = *slurm) {
    config->scheduler = step->Describe();
    config->scheduler_banner = step->Banner();
  }
  return std::move(config).value();
}

}  // namespace ddprun
