// Every flag of ddprun, with torchrun's spellings and its PET_ variable; see raw_options.h.
#include <CLI/CLI.hpp>
#include <algorithm>

#include "python_preload_options.h"
#include "raw_options.h"
#include "rendezvous_options.h"

namespace ddprun {

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

}  // namespace ddprun
