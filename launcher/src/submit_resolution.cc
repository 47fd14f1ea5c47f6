// ResolveSubmit; see submit_resolution.h.
#include "submit_resolution.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "ddprun/agent/input_forwarder.h"
#include "ddprun/base/environment_map.h"
#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status_macros.h"
#include "exported_environment.h"
#include "flag_values.h"
#include "host_list.h"

namespace ddprun {

Result<SubmitRequest> ResolveSubmit(const RawOptions& raw, const FlagParser& parser,
                                    const ParsedFlags& parsed) {
  const std::vector<std::string>& program_args = parsed.program;
  SubmitRequest request;
  if (!raw.hosts.empty() && !raw.hostfile.empty()) {
    return InvalidArgumentError("give --hosts or --hostfile, not both");
  }
  ASSIGN_OR_RETURN(request.hosts,
                   raw.hostfile.empty() ? ParseHostList(raw.hosts) : ReadHostFile(raw.hostfile));
  if (raw.standalone) {
    return InvalidArgumentError("--standalone runs one node here; leave it out with --hosts");
  }
  for (const char* per_host : {"--node_rank", "--local_addr"}) {
    if (parsed.Given(per_host)) {
      return InvalidArgumentError(std::string(per_host) +
                                  " is one host's; with --hosts each host's agent finds its own");
    }
  }
  if (parsed.Given("--metrics_port")) {
    return InvalidArgumentError(
        "--metrics_port is a node's; with --hosts the hosts' daemons serve the job's metrics "
        "(ddprund --metrics-port)");
  }
  const int host_count = static_cast<int>(request.hosts.size());
  RawOptions job = raw;
  // auto, cpu and gpu count each host's devices there, not the submitter's: checked by name only
  // (and --local_ranks_filter against them by each agent).
  if (raw.nproc_per_node == "auto" || raw.nproc_per_node == "cpu" || raw.nproc_per_node == "gpu") {
    job.nproc_per_node = "1";
    job.local_ranks_filter.clear();
  }
  if (!parsed.Given("--nnodes")) job.nnodes = std::to_string(host_count);
  if (job.rdzv_endpoint.empty()) job.rdzv_endpoint = request.hosts.front();
  if (job.run_id.empty()) job.run_id = RandomRunId();
  ASSIGN_OR_RETURN(LaunchConfig config, Resolve(job, program_args, /*resolve_program=*/false));
  if (config.min_nodes > host_count) {
    return InvalidArgumentError("--nnodes=" + job.nnodes + " does not allow the " +
                                std::to_string(host_count) + " hosts given (one node each)");
  }
  // Hosts beyond --nnodes's maximum are spares, which the submitter starts when a host is lost.
  request.nodes = static_cast<size_t>(std::min(host_count, config.max_nodes));
  request.min_nodes = static_cast<size_t>(config.min_nodes);
  if (request.nodes < request.hosts.size() && raw.detach) {
    return InvalidArgumentError(
        "--detach leaves no one to start the spare hosts (those beyond --nnodes=" + job.nnodes +
        "); list at most " + std::to_string(config.max_nodes) + " hosts, or follow the job");
  }
  request.job_id = config.run_id;
  request.submission_id = RandomRunId();
  request.rendezvous = config.rdzv_host + ":" + std::to_string(config.rdzv_port);
  request.agent_rendezvous = request.rendezvous;
  request.rendezvous_given = parsed.Given("--rdzv_endpoint");
  request.security = config.security;
  request.detach = raw.detach;
  // As on one node: a terminal, pipe or socket is read and passed to global rank 0; a file or
  // /dev/null is not (the agents' workers then read /dev/null).
  request.forward_input =
      !raw.detach && raw.stdin_to == "0" && InputForwarder::CanForward(STDIN_FILENO);
  request.program = program_args;
  ASSIGN_OR_RETURN(request.program_mode, ProgramModeOf(raw.module, raw.no_python, raw.run_path));
  request.shutdown_timeout = config.shutdown_timeout;
  ASSIGN_OR_RETURN(request.environment, ExportedEnvironment(raw.export_spec, CurrentEnvironment()));
  std::error_code error;
  request.working_dir = std::filesystem::current_path(error).string();
  if (error) return InvalidArgumentError("cannot tell the working directory: " + error.message());
  // Each daemon gives its agent its own token file; the rest is spelled out for the agent.
  request.agent_args =
      parser.Without(parsed.own, {"--hosts", "--hostfile", "--detach", "--export", "--token-file",
                                  "--nnodes", "--rdzv_endpoint", "--rdzv_id", "--tty"});
  std::string tty = raw.tty;
  if (tty == "auto") tty = ::isatty(STDOUT_FILENO) == 1 ? "always" : "never";
  // The workers' terminals start as large as the submitter's, and follow its resizes.
  if (const TerminalSize size = TerminalSizeOf(STDOUT_FILENO); size.rows > 0 && size.cols > 0) {
    request.environment["DDPRUN_TERMINAL_SIZE"] =
        std::to_string(size.rows) + "x" + std::to_string(size.cols);
  }
  request.agent_args.insert(
      request.agent_args.end(),
      {"--nnodes=" + std::to_string(config.min_nodes) + ":" + std::to_string(config.max_nodes),
       "--rdzv_id=" + request.job_id, "--tty=" + tty});
  return request;
}

}  // namespace ddprun
