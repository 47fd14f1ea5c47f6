// The torchrun flags of build and plugin concerns; see torchrun_compat_options.h.
#include "torchrun_compat_options.h"

#include <set>

#include "ddprun/base/parsing.h"

namespace ddprun {
namespace {

// The signals ddprun's agent always handles: forwarded to every worker, then SIGKILL after
// --shutdown_timeout. They are torchrun's default --signals_to_handle.
const std::set<std::string> kHandledSignals = {"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"};

}  // namespace

std::vector<FlagSpec> TorchrunCompatFlags(TorchrunCompatOptions& options) {
  return {
      {.name = "--virtual_local_rank",
       .help = "Give every worker LOCAL_RANK=0 and only its own GPU in CUDA_VISIBLE_DEVICES",
       .target = &options.virtual_local_rank},
      {.name = "--signals_to_handle",
       .help =
           "Accepted for torchrun compatibility: ddprun always handles SIGTERM, SIGINT, SIGHUP and "
           "SIGQUIT",
       .target = &options.signals_to_handle},
      {.name = "--numa_binding",
       .help = "Bind each worker to the CPUs and memory node nearest its GPU: node, socket, "
               "exclusive (a "
               "share of the node's cores) or core-complex (one L3 domain); without GPUs the "
               "workers are "
               "spread over the NUMA nodes",
       .target = &options.numa_binding},
      {.name = "--event_log_handler",
       .help =
           "Accepted for torchrun compatibility (null or console): ddprun logs its events itself "
           "(DDPRUN_LOG_LEVEL)",
       .target = &options.event_log_handler},
      {.name = "--log_line_prefix_template",
       .help = "The prefix of each console line of a worker's output, torchrun's template of "
               "${rank}, ${local_rank}, ${role_name} and ${hostname}; default: "
               "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE's, else [rankN]: ",
       .target = &options.log_line_prefix_template},
      // Refused by ResolveTorchrunCompatOptions, with what to use instead; defined (hidden) so
      // that their values parse and the message is ddprun's, not "unrecognized option".
      {.name = "--logs_specs", .target = &options.logs_specs},
      {.name = "--duplicate_stdout_filters", .target = &options.duplicate_stdout_filters},
      {.name = "--duplicate_stderr_filters", .target = &options.duplicate_stderr_filters},
      {.name = "--print_completion", .target = &options.print_completion},
      {.name = "--use_env", .pet = false, .target = &options.use_env},
      {.name = "--local_rank", .pet = false, .target = &options.local_rank},
  };
}

Status ResolveTorchrunCompatOptions(const TorchrunCompatOptions& options, LaunchConfig& config) {
  config.virtual_local_rank = options.virtual_local_rank;
  // As torchrun 2.x: the flag, else the variable (read where the workers' output is routed).
  if (!options.log_line_prefix_template.empty()) {
    config.log_line_prefix_template = options.log_line_prefix_template;
  }
  if (!options.signals_to_handle.empty()) {
    for (const std::string& name : SplitCommas(options.signals_to_handle)) {
      if (!kHandledSignals.contains(name)) {
        return InvalidArgumentError(
            "--signals_to_handle: ddprun handles SIGTERM, SIGINT, SIGHUP and SIGQUIT (forwarded "
            "to the workers, SIGKILL after --shutdown_timeout) and no other signal, not '" +
            name + "'; leave the flag out");
      }
    }
  }
  if (!options.event_log_handler.empty() && options.event_log_handler != "null" &&
      options.event_log_handler != "console") {
    return InvalidArgumentError("--event_log_handler=" + options.event_log_handler +
                                ": ddprun has no event-log plugins; it logs its events itself "
                                "(set DDPRUN_LOG_LEVEL=info to see them), so leave the flag out");
  }
  if (!options.logs_specs.empty()) {
    return InvalidArgumentError(
        "--logs_specs: not supported: ddprun has no log-spec plugins; choose where worker logs "
        "go with --log_dir, --redirects and --tee");
  }
  if (!options.numa_binding.empty()) {
    config.numa_binding = ParseNumaBinding(options.numa_binding);
    if (!config.numa_binding) {
      const std::string wanted = "--numa_binding must be node, socket, exclusive or core-complex";
      return InvalidArgumentError(wanted + ", not '" + options.numa_binding + "'");
    }
  }
  if (!options.duplicate_stdout_filters.empty() || !options.duplicate_stderr_filters.empty()) {
    return InvalidArgumentError(
        "--duplicate_stdout_filters/--duplicate_stderr_filters: not supported; copy worker output "
        "to files with --tee 3 --log_dir DIR and filter those files");
  }
  if (!options.print_completion.empty()) {
    return InvalidArgumentError(
        "--print_completion: not supported: ddprun prints no shell completion script; "
        "`ddprun --help` lists every flag");
  }
  if (options.use_env || !options.local_rank.empty()) {
    return InvalidArgumentError(
        std::string(options.use_env ? "--use_env" : "--local_rank") +
        " belongs to torch.distributed.launch: ddprun, like torchrun, always gives each worker "
        "LOCAL_RANK in its environment, so leave it out (and read os.environ['LOCAL_RANK'])");
  }
  return Status::Ok();
}

}  // namespace ddprun
