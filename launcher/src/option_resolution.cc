// Resolve: the flags checked and made into a LaunchConfig; see raw_options.h.
#include <cmath>
#include <filesystem>
#include <tuple>

#include "ddprun/agent/program_resolution.h"
#include "ddprun/base/environment_map.h"
#include "ddprun/base/files.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/rendezvous/rendezvous_conf.h"
#include "device_count.h"
#include "flag_values.h"
#include "python_preload_options.h"
#include "raw_options.h"
#include "rendezvous_options.h"

namespace ddprun {
namespace {

// torchrun's default --master_port.
constexpr int kTorchrunMasterPort = 29500;

// `path` made absolute (workers may run elsewhere); empty stays empty.
std::string AbsolutePath(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ignored;
  auto absolute = std::filesystem::absolute(path, ignored);
  return absolute.empty() ? path : absolute.string();
}

// The token and TLS files: how to reach the rendezvous, and what --metrics_port asks for.
Status ResolveSecurity(const RawOptions& raw, LaunchConfig& config) {
  ASSIGN_OR_RETURN(config.security,
                   LoadClientSecurity(raw.token_file, raw.tls_cert, raw.tls_key, raw.tls_ca));
  config.tls_ca_file = AbsolutePath(raw.tls_ca);
  config.tls_cert_file = AbsolutePath(raw.tls_cert);
  config.tls_key_file = AbsolutePath(raw.tls_key);
  return Status::Ok();
}

// --rdzv_endpoint, --rdzv_backend, --rdzv_conf and the security files, for a multi-node job.
Status ResolveRendezvous(const RawOptions& raw, LaunchConfig& config) {
  const std::string& backend = raw.rdzv_backend;
  if (backend == "etcd" || backend == "etcd-v2") {
    return InvalidArgumentError("--rdzv_backend=" + backend +
                                ": that is etcd's v2 API, which etcd 3.6 removed; ddprun speaks "
                                "v3: use --rdzv_backend=etcd-v3 --rdzv_endpoint=HOST:2379,...");
  }
  if (backend != "static" && backend != "c10d" && backend != "ddprun" && backend != "etcd-v3") {
    return InvalidArgumentError("--rdzv_backend=" + backend +
                                ": ddprun has its own rendezvous server; use c10d (or leave the "
                                "flag out) with --rdzv_endpoint=HOST:PORT, or etcd-v3 with "
                                "--rdzv_endpoint=ETCD_HOST:2379,...");
  }
  config.rdzv_on_etcd = backend == "etcd-v3";
  ASSIGN_OR_RETURN(config.rdzv_settings, ParseRendezvousConf(raw.rdzv_conf));
  config.rdzv_settings.min_nodes = config.min_nodes;
  config.rdzv_settings.max_nodes = config.max_nodes;
  config.rdzv_settings.max_restarts = config.max_restarts;
  config.multi_node = !raw.standalone && (!raw.rdzv_endpoint.empty() || config.max_nodes > 1);
  if (!config.multi_node) {
    // One node: the security files serve only --metrics_port's endpoint.
    return raw.metrics_port >= 0 ? ResolveSecurity(raw, config) : Status::Ok();
  }
  std::string endpoint_text = raw.rdzv_endpoint;
  if (endpoint_text.empty() && backend == "static" && raw.master_addr_given) {
    // torchrun's static rendezvous meets at --master_addr:--master_port (Kubeflow's PyTorchJob
    // and TrainJob give only those): so does ddprun's, whose server node 0's agent then hosts.
    // The workers' MASTER_PORT is then a port of its own, not the rendezvous's.
    endpoint_text = raw.master_addr + ":" +
                    std::to_string(raw.master_port != -1 ? raw.master_port : kTorchrunMasterPort);
    config.rendezvous_at_master = true;
  }
  if (endpoint_text.empty()) {
    return InvalidArgumentError("--nnodes=" + raw.nnodes +
                                " needs --rdzv_endpoint=HOST:PORT (the same on every node) and "
                                "--rdzv_id=JOB");
  }
  config.rdzv_endpoints.clear();
  for (const std::string& entry : SplitCommas(endpoint_text)) {
    ASSIGN_OR_RETURN(auto endpoint,
                     ParseEndpoint(Trim(entry), config.rdzv_on_etcd ? kDefaultEtcdPort
                                                                    : kDefaultRendezvousPort));
    config.rdzv_endpoints.emplace_back(endpoint.host, endpoint.port);
  }
  std::tie(config.rdzv_host, config.rdzv_port) = config.rdzv_endpoints.front();
  RETURN_IF_ERROR(ResolveSecurity(raw, config));
  config.local_addr = raw.local_addr;
  return Status::Ok();
}

// How many workers and nodes, and which node this is.
Status ResolveNodes(const RawOptions& raw, LaunchConfig& config) {
  ASSIGN_OR_RETURN(config.nproc_per_node, ResolveNprocPerNode(raw.nproc_per_node));
  RETURN_IF_ERROR(ResolveNnodes(raw.nnodes, config));
  config.standalone = raw.standalone;
  if (raw.standalone) config.min_nodes = config.max_nodes = 1;
  return Status::Ok();
}

Status ResolveRestarts(const RawOptions& raw, LaunchConfig& config) {
  if (raw.max_restarts < 0) {
    return InvalidArgumentError("--max_restarts must be 0 or more, not " +
                                std::to_string(raw.max_restarts));
  }
  config.max_restarts = raw.max_restarts;
  if (raw.monitor_interval < 0 || std::isnan(raw.monitor_interval)) {
    return InvalidArgumentError("--monitor_interval must be 0 or more");
  }
  return Status::Ok();
}

// --node_rank, --master_port and --master_addr, once the rendezvous is resolved.
Status ResolveNodeRankAndMaster(const RawOptions& raw, LaunchConfig& config) {
  if (raw.node_rank < 0 || raw.node_rank >= config.max_nodes) {
    return InvalidArgumentError("--node_rank must be from 0 to " +
                                std::to_string(config.max_nodes - 1) + ", not " +
                                std::to_string(raw.node_rank));
  }
  config.node_rank = raw.node_rank;
  config.node_rank_given = raw.node_rank_given;
  if (raw.master_port != -1 && (raw.master_port < 1 || raw.master_port > 65535)) {
    return InvalidArgumentError("--master_port must be from 1 to 65535, not " +
                                std::to_string(raw.master_port));
  }
  if (raw.master_port != -1 && !config.rendezvous_at_master) config.master_port = raw.master_port;
  if (raw.master_addr.empty()) return InvalidArgumentError("--master_addr must not be empty");
  config.master_addr = raw.master_addr;
  return Status::Ok();
}

Status ResolveShutdownRoleAndMetrics(const RawOptions& raw, LaunchConfig& config) {
  if (!(raw.shutdown_timeout >= 0) || raw.shutdown_timeout > 86400) {
    return InvalidArgumentError("--shutdown_timeout must be from 0 to 86400 seconds");
  }
  config.shutdown_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::llround(raw.shutdown_timeout * 1000)));
  if (raw.role.empty()) return InvalidArgumentError("--role must not be empty");
  config.role = raw.role;
  if (raw.metrics_port > 65535) {
    return InvalidArgumentError("--metrics_port must be from 0 to 65535, not " +
                                std::to_string(raw.metrics_port));
  }
  if (raw.metrics_port >= 0) config.metrics_port = raw.metrics_port;
  return Status::Ok();
}

// Terminals, stdin, and where each rank's output goes.
Status ResolveConsole(const RawOptions& raw, LaunchConfig& config) {
  config.tty = raw.tty == "always"  ? LaunchConfig::Tty::kAlways
               : raw.tty == "never" ? LaunchConfig::Tty::kNever
                                    : LaunchConfig::Tty::kAuto;
  config.stdin_to = raw.stdin_to == "none"  ? LaunchConfig::Stdin::kNone
                    : raw.stdin_to == "all" ? LaunchConfig::Stdin::kAll
                                            : LaunchConfig::Stdin::kRankZero;
  ASSIGN_OR_RETURN(config.redirects, ParsePerRankStreams("--redirects", raw.redirects));
  ASSIGN_OR_RETURN(config.tee, ParsePerRankStreams("--tee", raw.tee));
  if (!raw.local_ranks_filter.empty()) {
    ASSIGN_OR_RETURN(config.local_ranks_filter,
                     ParseRankList(raw.local_ranks_filter, config.nproc_per_node));
  }
  return Status::Ok();
}

Status ResolveRunId(const RawOptions& raw, LaunchConfig& config) {
  if (raw.run_id.empty()) {
    config.run_id = raw.standalone ? RandomRunId() : "none";
    return Status::Ok();
  }
  if (raw.run_id.find('/') != std::string::npos || raw.run_id == "." || raw.run_id == "..") {
    return InvalidArgumentError("--run_id must not contain '/' (it names a directory), not '" +
                                raw.run_id + "'");
  }
  config.run_id = raw.run_id;
  return Status::Ok();
}

// The worker's command line and warm starts; with `resolve_program` false (a job for other
// hosts) only the flags are checked, since the program is looked for where it runs.
Status ResolveProgram(const RawOptions& raw, const std::vector<std::string>& program_args,
                      bool resolve_program, LaunchConfig& config) {
  if (program_args.empty()) {
    return InvalidArgumentError("no program to run; usage: ddprun [OPTIONS] PROGRAM [ARGS...]");
  }
  ASSIGN_OR_RETURN(const ProgramMode mode, ProgramModeOf(raw.module, raw.no_python, raw.run_path));
  RETURN_IF_ERROR(ResolveTorchrunCompatOptions(raw.compat, config));
  if (!resolve_program) return Status::Ok();
  ProgramRequest request{
      program_args.front(), {program_args.begin() + 1, program_args.end()}, mode};
  ASSIGN_OR_RETURN(config.worker_argv, ResolveWorkerCommand(request));
  ASSIGN_OR_RETURN(config.python_preload,
                   ResolvePythonPreload(raw.python_preload, request, config.worker_argv));
  return Status::Ok();
}

Status ResolveLogDir(const RawOptions& raw, LaunchConfig& config) {
  if (raw.log_dir.empty()) return Status::Ok();
  if (Status s = CreateDirectories(raw.log_dir); !s.ok()) {
    return InvalidArgumentError("--log_dir: " + s.message());
  }
  config.log_dir = raw.log_dir;
  return Status::Ok();
}

}  // namespace

Result<LaunchConfig> Resolve(const RawOptions& raw, const std::vector<std::string>& program_args,
                             bool resolve_program) {
  LaunchConfig config;
  RETURN_IF_ERROR(ResolveNodes(raw, config));
  RETURN_IF_ERROR(ResolveRestarts(raw, config));
  RETURN_IF_ERROR(ResolveRendezvous(raw, config));
  RETURN_IF_ERROR(ResolveHangOptions(raw.hang, config.rdzv_settings.hang));
  RETURN_IF_ERROR(ResolveNodeRankAndMaster(raw, config));
  RETURN_IF_ERROR(ResolveShutdownRoleAndMetrics(raw, config));
  RETURN_IF_ERROR(ResolveConsole(raw, config));
  RETURN_IF_ERROR(ResolveRunId(raw, config));
  RETURN_IF_ERROR(ResolveProgram(raw, program_args, resolve_program, config));
  if (!resolve_program) return config;
  RETURN_IF_ERROR(ResolveLogDir(raw, config));
  return config;
}

}  // namespace ddprun
