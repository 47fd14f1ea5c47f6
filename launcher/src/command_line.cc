// ParseCommandLine; see command_line.h.
#include "command_line.h"

#include <CLI/CLI.hpp>
#include <cstdlib>

#include "raw_options.h"
#include "slurm_flags.h"
#include "submit_resolution.h"

namespace ddprun {
namespace {

// The index of the program in args: the first argument that is not an option or an option's
// value, or the one after "--". args.size() when there is none.
size_t FindProgram(CLI::App& app, const std::vector<std::string>& args, bool& saw_double_dash) {
  saw_double_dash = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      saw_double_dash = true;
      return i + 1;
    }
    if (arg.size() < 2 || arg[0] != '-') return i;
    if (arg.find('=') != std::string::npos) continue;  // --flag=value
    const CLI::Option* option =
        app.get_option_no_throw(arg.substr(0, arg[1] == '-' ? arg.size() : 2));
    if (option == nullptr) continue;  // unknown: CLI11 reports it
    const bool takes_value = option->get_expected_min() > 0;
    const bool attached = arg[1] != '-' && arg.size() > 2;  // -r3
    if (takes_value && !attached) ++i;
  }
  return args.size();
}

}  // namespace

ParsedCommandLine ParseCommandLine(const std::vector<std::string>& args) {
  CLI::App app(
      "ddprun [OPTIONS] PROGRAM [ARGS...]\n\nStart and supervise the workers of a data-parallel "
      "job on this node.\n"
      "Options as torchrun spells them (--nproc_per_node or --nproc-per-node; each also "
      "read from PET_<NAME>).\nEverything after PROGRAM is passed to it verbatim.",
      "ddprun");
  app.footer(
      "A .py PROGRAM runs as `python3 -u PROGRAM` (PYTHON_EXEC overrides the "
      "interpreter); anything else is executed.\nExit status: 0 when every worker "
      "exited 0; the root-cause worker's exit code (128+N for signal N) otherwise; 2 for "
      "usage errors.");
  RawOptions raw;
  DefineOptions(app, raw);

  bool saw_double_dash = false;
  const size_t program_index = FindProgram(app, args, saw_double_dash);
  std::vector<std::string> own(
      args.begin(), args.begin() + static_cast<std::ptrdiff_t>(saw_double_dash ? program_index - 1
                                                                               : program_index));
  std::vector<std::string> program_args(args.begin() + static_cast<std::ptrdiff_t>(program_index),
                                        args.end());
  std::vector<std::string> reversed(own.rbegin(), own.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    return HelpRequest{app.help()};
  } catch (const CLI::ExtrasError& e) {
    const std::string what = e.what();  // "The following arguments were not expected: -x"
    const size_t colon = what.find(": ");
    return UsageError{"unrecognized option " +
                      (colon == std::string::npos ? what : what.substr(colon + 2)) +
                      " (see ddprun --help)"};
  } catch (const CLI::ParseError& e) {
    return UsageError{std::string(e.what()) + " (see ddprun --help)"};
  }
  if (raw.version) return VersionRequest{};
  raw.node_rank_given = app.count("--node_rank") > 0;
  raw.master_addr_given = app.count("--master_addr") > 0;
  // A daemon's agent (its environment says so) runs its node; given these it would submit the
  // job again.
  if (std::getenv("DDPRUN_HOSTED_JOB") != nullptr) {
    for (const char* submitter_only : {"--hosts", "--hostfile", "--detach", "--export"}) {
      if (app.count(submitter_only) > 0) {
        return UsageError{std::string(submitter_only) +
                          " is the submitter's option, not a hosted job's agent's"};
      }
    }
  }
  if (!raw.hosts.empty() || !raw.hostfile.empty()) {
    auto submit = ResolveSubmit(raw, app, own, program_args);
    if (!submit.ok()) return UsageError{submit.status().message()};
    return std::move(submit).value();
  }
  for (const char* submit_only : {"--detach", "--export"}) {
    if (app.count(submit_only) > 0) {
      return UsageError{std::string(submit_only) + " is for jobs on many hosts; give --hosts"};
    }
  }
  auto slurm = ApplySlurmStep(app, raw);
  if (!slurm.ok()) return UsageError{slurm.status().message()};
  auto config = Resolve(raw, program_args);
  if (!config.ok()) return UsageError{config.status().message()};
  if (const std::optional<SlurmStep>& step = *slurm) {
    config->scheduler = step->Describe();
    config->scheduler_banner = step->Banner();
  }
  return std::move(config).value();
}

}  // namespace ddprun
