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

void DefineTorchrunCompatOptions(CLI::App& app, TorchrunCompatOptions& options) {
  auto pet = [](const char* dest) { return std::string("PET_") + dest; };
  app.add_flag("--virtual_local_rank,--virtual-local-rank", options.virtual_local_rank,
               "Give every worker LOCAL_RANK=0 and only its own GPU in CUDA_VISIBLE_DEVICES")
      ->envname(pet("VIRTUAL_LOCAL_RANK"));
  app.add_option("--signals_to_handle,--signals-to-handle", options.signals_to_handle,
                 "Accepted for torchrun compatibility: ddprun always handles SIGTERM, SIGINT, "
                 "SIGHUP and SIGQUIT")
      ->envname(pet("SIGNALS_TO_HANDLE"));
  app.add_option("--numa_binding,--numa-binding", options.numa_binding,
                 "Bind each worker to the CPUs and memory node nearest its GPU: node, socket, "
                 "exclusive (a share of the node's cores) or core-complex (one L3 domain); "
                 "without GPUs the workers are spread over the NUMA nodes")
      ->envname(pet("NUMA_BINDING"));
  app.add_option("--event_log_handler,--event-log-handler", options.event_log_handler,
                 "Accepted for torchrun compatibility (null or console): ddprun logs its events "
                 "itself (DDPRUN_LOG_LEVEL)")
      ->envname(pet("EVENT_LOG_HANDLER"));
  // Refused below, with what to use instead; defined so that their values parse and the message
  // is ddprun's, not "unrecognized option".
  app.add_option("--logs_specs,--logs-specs", options.logs_specs)
      ->envname(pet("LOGS_SPECS"))
      ->group("");
  app.add_option("--duplicate_stdout_filters,--duplicate-stdout-filters",
                 options.duplicate_stdout_filters)
      ->envname(pet("DUPLICATE_STDOUT_FILTERS"))
      ->group("");
  app.add_option("--duplicate_stderr_filters,--duplicate-stderr-filters",
                 options.duplicate_stderr_filters)
      ->envname(pet("DUPLICATE_STDERR_FILTERS"))
      ->group("");
  app.add_flag("--use_env,--use-env", options.use_env)->group("");
  app.add_option("--local_rank,--local-rank", options.local_rank)->group("");
}

Status ResolveTorchrunCompatOptions(const TorchrunCompatOptions& options, LaunchConfig& config) {
  config.virtual_local_rank = options.virtual_local_rank;
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
        "--logs_specs: ddprun has no log-spec plugins; choose where worker logs go with "
        "--log_dir, --redirects and --tee");
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
  if (options.use_env || !options.local_rank.empty()) {
    return InvalidArgumentError(
        std::string(options.use_env ? "--use_env" : "--local_rank") +
        " belongs to torch.distributed.launch: ddprun, like torchrun, always gives each worker "
        "LOCAL_RANK in its environment, so leave it out (and read os.environ['LOCAL_RANK'])");
  }
  return Status::Ok();
}

}  // namespace ddprun
