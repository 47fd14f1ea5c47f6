// ParseCommandLine; see command_line.h.
#include "ddprun/launcher/command_line.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include "ddprun/agent/input_forwarder.h"
#include "ddprun/agent/worker_environment.h"
#include "ddprun/agent/worker_process.h"
#include "ddprun/base/files.h"
#include "ddprun/base/hex.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/version.h"
#include "ddprun/launcher/program_resolution.h"
#include "ddprun/launcher/rendezvous_options.h"
#include "ddprun/rendezvous/rendezvous_conf.h"
#include "exported_environment.h"
#include "hang_options.h"
#include "host_list.h"
#include "python_preload_options.h"
#include "slurm_step.h"
#include "torchrun_compat_options.h"

namespace ddprun {
namespace {

constexpr int kMaxProcsPerNode = 1024;

// What CLI11 fills in; turned into a LaunchConfig by Resolve().
struct RawOptions {
  std::string tty = "auto";
  std::string stdin_to = "0";
  std::string nproc_per_node = "1";
  std::string nnodes = "1:1";
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string rdzv_conf;
  std::string run_id;
  bool standalone = false;
  int max_restarts = 0;
  double monitor_interval = 0.1;
  std::string start_method = "spawn";
  std::string role = "default";
  bool module = false;
  bool no_python = false;
  bool run_path = false;
  std::string log_dir;
  std::string redirects = "0";
  std::string tee = "0";
  std::string local_ranks_filter;
  int node_rank = 0;
  bool node_rank_given = false;    // set from the parse: the flag or PET_NODE_RANK
  bool master_addr_given = false;  // the same for --master_addr (PET_MASTER_ADDR)
  std::string master_addr = "127.0.0.1";
  int master_port = -1;
  double shutdown_timeout = 30;
  std::string token_file;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  std::string local_addr;
  bool version = false;
  TorchrunCompatOptions compat;
  HangOptions hang;
  std::string python_preload;
  // Submitting to the daemons of many hosts.
  std::string hosts;
  std::string hostfile;
  bool detach = false;
  std::string export_spec = "ALL";
};

// GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else the NVIDIA device nodes.
int CountGpus() {
  if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES")) {
    return *visible == '\0' ? 0 : static_cast<int>(SplitCommas(visible).size());
  }
  int count = 0;
  if (DIR* dev = ::opendir("/dev")) {
    while (dirent* entry = ::readdir(dev)) {
      std::string name = entry->d_name;
      if (name.size() > 6 && name.rfind("nvidia", 0) == 0 &&
          ParseInteger<int>(name.substr(6)).has_value()) {
        ++count;
      }
    }
    ::closedir(dev);
  }
  return count;
}

int CountCpus() {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  return 1;
}

Result<int> ResolveNprocPerNode(const std::string& text) {
  if (text == "cpu") return CountCpus();
  if (text == "gpu") {
    const int gpus = CountGpus();
    if (gpus == 0) {
      return InvalidArgumentError("--nproc_per_node=gpu but no GPU is visible; give a number");
    }
    return gpus;
  }
  if (text == "auto") {
    const int gpus = CountGpus();
    return gpus > 0 ? gpus : CountCpus();
  }
  auto value = ParseInteger<int>(text);
  if (!value || *value < 1 || *value > kMaxProcsPerNode) {
    return InvalidArgumentError("--nproc_per_node must be an integer from 1 to " +
                                std::to_string(kMaxProcsPerNode) + ", auto, cpu or gpu, not '" +
                                text + "'");
  }
  return *value;
}

Status ResolveNnodes(const std::string& text, LaunchConfig& config) {
  const auto colon = text.find(':');
  auto min_nodes = ParseInteger<int>(text.substr(0, colon));
  auto max_nodes =
      colon == std::string::npos ? min_nodes : ParseInteger<int>(text.substr(colon + 1));
  if (!min_nodes || !max_nodes || *min_nodes < 1 || *max_nodes < *min_nodes) {
    return InvalidArgumentError("--nnodes must be N or MIN:MAX with 1 <= MIN <= MAX, not '" + text +
                                "'");
  }
  config.min_nodes = *min_nodes;
  config.max_nodes = *max_nodes;
  return Status::Ok();
}

// "3", or a per-local-rank map "0:1,1:2" (torchrun's --redirects/--tee).
Result<PerRankStreams> ParsePerRankStreams(const std::string& flag, const std::string& text) {
  auto streams_of = [](const std::string& value) -> std::optional<StdStreams> {
    auto number = ParseInteger<int>(value);
    if (!number || *number < 0 || *number > 3) return std::nullopt;
    return static_cast<StdStreams>(*number);
  };
  const std::string usage = flag +
                            " must be 0 (none), 1 (stdout), 2 (stderr), 3 (both) or a map "
                            "like 0:1,1:2 from local rank to those, not '" +
                            text + "'";
  PerRankStreams result;
  if (text.find(':') == std::string::npos) {
    auto all = streams_of(text);
    if (!all) return InvalidArgumentError(usage);
    result.all = *all;
    return result;
  }
  for (const std::string& item : SplitCommas(text)) {
    const auto colon = item.find(':');
    if (colon == std::string::npos) return InvalidArgumentError(usage);
    auto rank = ParseInteger<int>(item.substr(0, colon));
    auto streams = streams_of(item.substr(colon + 1));
    if (!rank || *rank < 0 || !streams) return InvalidArgumentError(usage);
    result.by_local_rank[*rank] = *streams;
  }
  return result;
}

Result<std::set<int>> ParseRankList(const std::string& text, int nproc) {
  std::set<int> ranks;
  for (const std::string& item : SplitCommas(text)) {
    auto rank = ParseInteger<int>(item);
    if (!rank || *rank < 0 || *rank >= nproc) {
      return InvalidArgumentError("--local_ranks_filter must list local ranks from 0 to " +
                                  std::to_string(nproc - 1) + " separated by commas, not '" + text +
                                  "'");
    }
    ranks.insert(*rank);
  }
  return ranks;
}

std::string RandomRunId() {
  // A uuid4-like id, as torchrun --standalone makes; not a secret.
  unsigned char bytes[16];
  arc4random_buf(bytes, sizeof(bytes));
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  return HexEncode(bytes, 4) + "-" + HexEncode(bytes + 4, 2) + "-" + HexEncode(bytes + 6, 2) + "-" +
         HexEncode(bytes + 8, 2) + "-" + HexEncode(bytes + 10, 6);
}

// torchrun's default --master_port.
constexpr int kTorchrunMasterPort = 29500;

// Every flag, with torchrun's spellings and PET_* variable.
void DefineOptions(CLI::App& app, RawOptions& raw) {
  auto pet = [](const char* dest) { return std::string("PET_") + dest; };
  app.add_option("--nproc_per_node,--nproc-per-node", raw.nproc_per_node,
                 "Workers on this node: N, auto (GPUs, else CPUs), cpu or gpu")
      ->envname(pet("NPROC_PER_NODE"))
      ->capture_default_str();
  app.add_option("--nnodes", raw.nnodes, "Nodes in the job: N or MIN:MAX")
      ->envname(pet("NNODES"))
      ->capture_default_str();
  app.add_flag("--standalone", raw.standalone,
               "Single node with an embedded rendezvous server on 127.0.0.1 and a random run id")
      ->envname(pet("STANDALONE"));
  app.add_option("--rdzv_backend,--rdzv-backend", raw.rdzv_backend,
                 "Accepted for torchrun compatibility (static or c10d); ddprun has one rendezvous")
      ->envname(pet("RDZV_BACKEND"))
      ->capture_default_str();
  app.add_option("--rdzv_endpoint,--rdzv-endpoint", raw.rdzv_endpoint,
                 "HOST[:PORT] of the rendezvous server (multi-node)")
      ->envname(pet("RDZV_ENDPOINT"));
  app.add_option("--rdzv_conf,--rdzv-conf", raw.rdzv_conf, "Rendezvous settings, k1=v1,k2=v2")
      ->envname(pet("RDZV_CONF"));
  app.add_option("--rdzv_id,--rdzv-id,--run_id,--run-id", raw.run_id,
                 "Job id: names the log directory and scopes the store (default: random with "
                 "--standalone, else 'none')")
      ->envname(pet("RDZV_ID"));
  app.add_option("--max_restarts,--max-restarts", raw.max_restarts,
                 "Worker-group failures to restart before giving up")
      ->envname(pet("MAX_RESTARTS"))
      ->capture_default_str();
  app.add_option("--monitor_interval,--monitor-interval", raw.monitor_interval,
                 "Accepted for torchrun compatibility; ddprun reacts to events and never polls")
      ->envname(pet("MONITOR_INTERVAL"));
  app.add_option("--start_method,--start-method", raw.start_method,
                 "Accepted for torchrun compatibility (spawn, fork, forkserver); workers are "
                 "exec'd, or forked from a preloaded interpreter with --python_preload")
      ->envname(pet("START_METHOD"))
      ->check(CLI::IsMember({"spawn", "fork", "forkserver"}));
  app.add_option("--role", raw.role, "Worker role name (ROLE_NAME)")
      ->envname(pet("ROLE"))
      ->capture_default_str();
  app.add_flag("-m,--module", raw.module, "Run the program as a Python module (python -m)")
      ->envname(pet("MODULE"));
  app.add_flag("--no_python,--no-python", raw.no_python,
               "Execute the program directly, even a .py file")
      ->envname(pet("NO_PYTHON"));
  app.add_flag("--run_path,--run-path", raw.run_path,
               "Run the program as a Python script whatever its name (over --no_python)")
      ->envname(pet("RUN_PATH"));
  app.add_option("--log_dir,--log-dir", raw.log_dir,
                 "Directory for per-worker logs and error files "
                 "(<log_dir>/<run_id>/attempt_<n>/<local_rank>/); default: a temporary one")
      ->envname(pet("LOG_DIR"));
  app.add_option("-r,--redirects", raw.redirects,
                 "Send worker output to log files instead of the console: 0 none, 1 stdout, "
                 "2 stderr, 3 both, or per local rank as 0:1,1:2")
      ->envname(pet("REDIRECTS"))
      ->capture_default_str();
  app.add_option("-t,--tee", raw.tee,
                 "Copy worker output to log files as well as the console (values as -r)")
      ->envname(pet("TEE"))
      ->capture_default_str();
  app.add_option("--local_ranks_filter,--local-ranks-filter", raw.local_ranks_filter,
                 "Show console output of these local ranks only, e.g. 0,3")
      ->envname(pet("LOCAL_RANKS_FILTER"));
  app.add_option("--tty", raw.tty,
                 "Give each worker's stdout and stderr a pseudo-terminal when ddprun's own is a "
                 "terminal (auto), always, or never (pipes)")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
  app.add_option("--stdin", raw.stdin_to,
                 "Where ddprun's stdin goes: 0 (the worker of global rank 0), none (/dev/null "
                 "for all), or all (every local worker reads it, as under torchrun)")
      ->check(CLI::IsMember({"0", "none", "all"}))
      ->capture_default_str();
  app.add_option("--node_rank,--node-rank", raw.node_rank, "This node's rank (static rendezvous)")
      ->envname(pet("NODE_RANK"))
      ->capture_default_str();
  app.add_option("--master_addr,--master-addr", raw.master_addr, "MASTER_ADDR given to the workers")
      ->envname(pet("MASTER_ADDR"))
      ->capture_default_str();
  app.add_option("--master_port,--master-port", raw.master_port,
                 "MASTER_PORT given to the workers (default: a free port ddprun reserves)")
      ->envname(pet("MASTER_PORT"));
  app.add_option("--shutdown_timeout,--shutdown-timeout", raw.shutdown_timeout,
                 "Seconds between SIGTERM and SIGKILL when stopping workers")
      ->envname(pet("SHUTDOWN_TIMEOUT"))
      ->capture_default_str();
  AddSecurityOptions(app, raw.token_file, raw.tls_cert, raw.tls_key, raw.tls_ca);
  app.add_option("--local_addr,--local-addr", raw.local_addr,
                 "Address the other nodes reach this one at (default: this host's address on "
                 "the route to the rendezvous server)")
      ->envname(pet("LOCAL_ADDR"));
  app.add_flag("--version", raw.version, "Print the version and exit");
  app.add_option("--hosts", raw.hosts,
                 "Run the job on these hosts through their ddprund (HOST[:PORT],...; port "
                 "29400): one node each, no ssh; --nnodes defaults to their number");
  app.add_option("--hostfile", raw.hostfile, "Read --hosts from this file, one HOST[:PORT] a line");
  app.add_flag("--detach", raw.detach,
               "With --hosts: print the job id once it runs and return (ddprun attach JOB)");
  app.add_option("--export", raw.export_spec,
                 "With --hosts: the environment that travels: ALL (but host-specific variables), "
                 "NONE, or NAME,NAME=value,... (after ALL, or alone)")
      ->capture_default_str();
  DefineTorchrunCompatOptions(app, raw.compat);
  DefineHangOptions(app, raw.hang);
  DefinePythonPreloadOption(app, raw.python_preload);
}

// `args` without the options named in `names` (any of their spellings) and their values.
std::vector<std::string> WithoutOptions(CLI::App& app, const std::vector<std::string>& args,
                                        const std::vector<std::string>& names) {
  std::vector<const CLI::Option*> removed;
  for (const std::string& name : names) removed.push_back(app.get_option_no_throw(name));
  std::vector<std::string> kept;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const size_t equals = arg.find('=');
    const CLI::Option* option = app.get_option_no_throw(arg.substr(0, equals));
    if (option == nullptr || std::find(removed.begin(), removed.end(), option) == removed.end()) {
      kept.push_back(arg);
      continue;
    }
    if (equals == std::string::npos && option->get_expected_min() > 0) ++i;  // its value
  }
  return kept;
}

// `path` made absolute (workers may run elsewhere); empty stays empty.
std::string AbsolutePath(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ignored;
  auto absolute = std::filesystem::absolute(path, ignored);
  return absolute.empty() ? path : absolute.string();
}

// --rdzv_endpoint, --rdzv_backend, --rdzv_conf and the security files, for a multi-node job.
Status ResolveRendezvous(const RawOptions& raw, LaunchConfig& config) {
  const std::string& backend = raw.rdzv_backend;
  if (backend != "static" && backend != "c10d" && backend != "ddprun") {
    return InvalidArgumentError("--rdzv_backend=" + backend +
                                ": ddprun has its own rendezvous server; use c10d (or leave the "
                                "flag out) with --rdzv_endpoint=HOST:PORT");
  }
  ASSIGN_OR_RETURN(config.rdzv_settings, ParseRendezvousConf(raw.rdzv_conf));
  config.rdzv_settings.min_nodes = config.min_nodes;
  config.rdzv_settings.max_nodes = config.max_nodes;
  config.rdzv_settings.max_restarts = config.max_restarts;
  config.multi_node = !raw.standalone && (!raw.rdzv_endpoint.empty() || config.max_nodes > 1);
  if (!config.multi_node) return Status::Ok();
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
  ASSIGN_OR_RETURN(auto endpoint, ParseEndpoint(endpoint_text, kDefaultRendezvousPort));
  config.rdzv_host = endpoint.host;
  config.rdzv_port = endpoint.port;
  ASSIGN_OR_RETURN(config.security,
                   LoadClientSecurity(raw.token_file, raw.tls_cert, raw.tls_key, raw.tls_ca));
  config.tls_ca_file = AbsolutePath(raw.tls_ca);
  config.tls_cert_file = AbsolutePath(raw.tls_cert);
  config.tls_key_file = AbsolutePath(raw.tls_key);
  config.local_addr = raw.local_addr;
  return Status::Ok();
}

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

// `resolve_program`: look for the program here (false for a submitted job: it runs elsewhere).
Result<LaunchConfig> Resolve(const RawOptions& raw, const std::vector<std::string>& program_args,
                             bool resolve_program = true) {
  LaunchConfig config;
  ASSIGN_OR_RETURN(config.nproc_per_node, ResolveNprocPerNode(raw.nproc_per_node));
  RETURN_IF_ERROR(ResolveNnodes(raw.nnodes, config));
  config.standalone = raw.standalone;
  if (raw.standalone) config.min_nodes = config.max_nodes = 1;
  if (raw.max_restarts < 0) {
    return InvalidArgumentError("--max_restarts must be 0 or more, not " +
                                std::to_string(raw.max_restarts));
  }
  config.max_restarts = raw.max_restarts;
  RETURN_IF_ERROR(ResolveRendezvous(raw, config));
  RETURN_IF_ERROR(ResolveHangOptions(raw.hang, config.rdzv_settings.hang));
  if (raw.monitor_interval < 0 || std::isnan(raw.monitor_interval)) {
    return InvalidArgumentError("--monitor_interval must be 0 or more");
  }
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
  if (!(raw.shutdown_timeout >= 0) || raw.shutdown_timeout > 86400) {
    return InvalidArgumentError("--shutdown_timeout must be from 0 to 86400 seconds");
  }
  config.shutdown_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(std::llround(raw.shutdown_timeout * 1000)));
  if (raw.role.empty()) return InvalidArgumentError("--role must not be empty");
  config.role = raw.role;

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

  if (!raw.run_id.empty()) {
    if (raw.run_id.find('/') != std::string::npos || raw.run_id == "." || raw.run_id == "..") {
      return InvalidArgumentError("--run_id must not contain '/' (it names a directory), not '" +
                                  raw.run_id + "'");
    }
    config.run_id = raw.run_id;
  } else {
    config.run_id = raw.standalone ? RandomRunId() : "none";
  }

  if (program_args.empty()) {
    return InvalidArgumentError("no program to run; usage: ddprun [OPTIONS] PROGRAM [ARGS...]");
  }
  if (raw.module && raw.no_python && !raw.run_path) {
    return InvalidArgumentError("-m/--module and --no_python cannot be used together");
  }
  if (raw.module && raw.run_path) {
    return InvalidArgumentError("-m/--module and --run_path cannot be used together");
  }
  RETURN_IF_ERROR(ResolveTorchrunCompatOptions(raw.compat, config));
  ProgramRequest request{program_args.front(),
                         {program_args.begin() + 1, program_args.end()},
                         raw.module,
                         raw.no_python && !raw.run_path,
                         raw.run_path};
  if (!resolve_program) return config;
  ASSIGN_OR_RETURN(config.worker_argv, ResolveWorkerCommand(request));
  ASSIGN_OR_RETURN(config.python_preload,
                   ResolvePythonPreload(raw.python_preload, request, config.worker_argv));

  if (!raw.log_dir.empty()) {
    if (Status s = CreateDirectories(raw.log_dir); !s.ok()) {
      return InvalidArgumentError("--log_dir: " + s.message());
    }
    config.log_dir = raw.log_dir;
  }
  return config;
}

// Fills in, from the Slurm step ddprun runs in, the flags the user left out (slurm_step.h). A
// --nnodes or --node_rank that contradicts the step is refused. With --standalone only
// --nproc_per_node is taken: the user asked for one node. Returns the step, its flags those
// taken; nullopt outside one.
Result<std::optional<SlurmStep>> ApplySlurmStep(CLI::App& app, RawOptions& raw) {
  ASSIGN_OR_RETURN(auto step, ReadSlurmStep(CurrentEnvironment(), CountGpus()));
  if (!step) return step;
  const std::map<std::string, std::string*> strings = {{"--nnodes", &raw.nnodes},
                                                       {"--rdzv_endpoint", &raw.rdzv_endpoint},
                                                       {"--rdzv_id", &raw.run_id},
                                                       {"--nproc_per_node", &raw.nproc_per_node}};
  std::vector<DerivedFlag> taken;
  for (const DerivedFlag& derived : step->flags) {
    if (raw.standalone && derived.flag != "--nproc_per_node") continue;
    if (app.count(derived.flag) > 0) {
      const bool contradicts =
          (derived.flag == "--nnodes" && raw.nnodes.find(':') == std::string::npos &&
           raw.nnodes != derived.value) ||
          (derived.flag == "--node_rank" && std::to_string(raw.node_rank) != derived.value);
      if (contradicts) {
        return InvalidArgumentError(
            derived.flag + "=" +
            (derived.flag == "--nnodes" ? raw.nnodes : std::to_string(raw.node_rank)) +
            " contradicts the Slurm step (" + derived.flag + "=" + derived.value + " from " +
            derived.source + "); leave the flag out under srun");
      }
      continue;  // given, and so it stands
    }
    if (derived.flag == "--node_rank") {
      raw.node_rank = std::stoi(derived.value);
      raw.node_rank_given = true;
    } else {
      *strings.at(derived.flag) = derived.value;
    }
    taken.push_back(derived);
  }
  step->flags = std::move(taken);
  return step;
}

// A job for the daemons of --hosts: the flags checked as for one node, the agent's options
// without the submitter's own, and what the submitter's defaults fill in.
Result<SubmitRequest> ResolveSubmit(const RawOptions& raw, CLI::App& app,
                                    const std::vector<std::string>& own,
                                    const std::vector<std::string>& program_args) {
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
    if (app.count(per_host) > 0) {
      return InvalidArgumentError(std::string(per_host) +
                                  " is one host's; with --hosts each host's agent finds its own");
    }
  }
  const int host_count = static_cast<int>(request.hosts.size());
  RawOptions job = raw;
  // auto, cpu and gpu count each host's devices there, not the submitter's: checked by name only
  // (and --local_ranks_filter against them by each agent).
  if (raw.nproc_per_node == "auto" || raw.nproc_per_node == "cpu" || raw.nproc_per_node == "gpu") {
    job.nproc_per_node = "1";
    job.local_ranks_filter.clear();
  }
  if (app.count("--nnodes") == 0) job.nnodes = std::to_string(host_count);
  if (job.rdzv_endpoint.empty()) job.rdzv_endpoint = request.hosts.front();
  if (job.run_id.empty()) job.run_id = RandomRunId();
  ASSIGN_OR_RETURN(LaunchConfig config, Resolve(job, program_args, /*resolve_program=*/false));
  if (config.min_nodes > host_count || config.max_nodes < host_count) {
    return InvalidArgumentError("--nnodes=" + job.nnodes + " does not allow the " +
                                std::to_string(host_count) + " hosts given (one node each)");
  }
  request.job_id = config.run_id;
  request.rendezvous = config.rdzv_host + ":" + std::to_string(config.rdzv_port);
  request.security = config.security;
  request.detach = raw.detach;
  // As on one node: a terminal, pipe or socket is read and passed to global rank 0; a file or
  // /dev/null is not (the agents' workers then read /dev/null).
  request.forward_input =
      !raw.detach && raw.stdin_to == "0" && InputForwarder::CanForward(STDIN_FILENO);
  request.program = program_args;
  request.python_module = raw.module;
  request.no_python = raw.no_python;
  request.run_path = raw.run_path;
  ASSIGN_OR_RETURN(request.environment, ExportedEnvironment(raw.export_spec, CurrentEnvironment()));
  std::error_code error;
  request.working_dir = std::filesystem::current_path(error).string();
  if (error) return InvalidArgumentError("cannot tell the working directory: " + error.message());
  // Each daemon gives its agent its own token file; the rest is spelled out for the agent.
  request.agent_args =
      WithoutOptions(app, own,
                     {"--hosts", "--hostfile", "--detach", "--export", "--token-file", "--nnodes",
                      "--rdzv_endpoint", "--rdzv_id", "--tty"});
  std::string tty = raw.tty;
  if (tty == "auto") tty = ::isatty(STDOUT_FILENO) == 1 ? "always" : "never";
  // The workers' terminals start as large as the submitter's (resizes do not travel).
  if (const TerminalSize size = TerminalSizeOf(STDOUT_FILENO); size.rows > 0 && size.cols > 0) {
    request.environment["DDPRUN_TERMINAL_SIZE"] =
        std::to_string(size.rows) + "x" + std::to_string(size.cols);
  }
  request.agent_args.insert(
      request.agent_args.end(),
      {"--nnodes=" + std::to_string(config.min_nodes) + ":" + std::to_string(config.max_nodes),
       "--rdzv_endpoint=" + request.rendezvous, "--rdzv_id=" + request.job_id, "--tty=" + tty});
  return request;
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
