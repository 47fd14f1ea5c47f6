// Every flag of ddprun, with torchrun's spellings and its PET_ variable; see raw_options.h.
#include <iterator>

#include "ddprun/base/flag_spec.h"
#include "python_preload_options.h"
#include "raw_options.h"
#include "rendezvous_options.h"

namespace ddprun {
namespace {

void Append(std::vector<FlagSpec>& flags, std::vector<FlagSpec> more) {
  flags.insert(flags.end(), std::make_move_iterator(more.begin()),
               std::make_move_iterator(more.end()));
}

}  // namespace

std::vector<FlagSpec> FlagTable(RawOptions& raw) {
  std::vector<FlagSpec> flags = {
      {.name = "--nproc_per_node",
       .help = "Workers on this node: N, auto (GPUs, else CPUs), cpu or gpu",
       .target = &raw.nproc_per_node,
       .show_default = true},
      {.name = "--nnodes",
       .help = "Nodes in the job: N or MIN:MAX",
       .target = &raw.nnodes,
       .show_default = true},
      {.name = "--standalone",
       .help = "Single node with an embedded rendezvous server on 127.0.0.1 and a random run id",
       .target = &raw.standalone},
      {.name = "--rdzv_backend",
       .help = "static or c10d (torchrun's names for ddprun's own rendezvous), or etcd-v3: "
               "--rdzv_endpoint lists etcd's members, and the agents run the rendezvous "
               "themselves, one at a time, over etcd",
       .target = &raw.rdzv_backend,
       .show_default = true},
      {.name = "--rdzv_endpoint",
       .help = "HOST[:PORT] of the rendezvous server (multi-node); several, comma-separated: "
               "daemons on one etcd, any of which serves the job; with etcd-v3, etcd's members "
               "(port 2379 by default)",
       .target = &raw.rdzv_endpoint},
      {.name = "--rdzv_conf", .help = "Rendezvous settings, k1=v1,k2=v2", .target = &raw.rdzv_conf},
      {.name = "--rdzv_id",
       .aliases = {"--run_id"},
       .help = "Job id: names the log directory and scopes the store (default: random with "
               "--standalone, else 'none')",
       .target = &raw.run_id},
      {.name = "--max_restarts",
       .help = "Worker-group failures to restart before giving up",
       .target = &raw.max_restarts,
       .show_default = true},
      {.name = "--monitor_interval",
       .help = "Accepted for torchrun compatibility; ddprun reacts to events and never polls",
       .target = &raw.monitor_interval},
      {.name = "--start_method",
       .help =
           "Accepted for torchrun compatibility (spawn, fork, forkserver); workers are exec'd, or "
           "forked from a preloaded interpreter with --python_preload",
       .target = &raw.start_method,
       .choices = {"spawn", "fork", "forkserver"}},
      {.name = "--role",
       .help = "Worker role name (ROLE_NAME)",
       .target = &raw.role,
       .show_default = true},
      {.name = "--module",
       .aliases = {"-m"},
       .help = "Run the program as a Python module (python -m)",
       .target = &raw.module},
      {.name = "--no_python",
       .help = "Execute the program directly, even a .py file",
       .target = &raw.no_python},
      {.name = "--run_path",
       .help = "Run the program as a Python script whatever its name (over --no_python)",
       .target = &raw.run_path},
      {.name = "--log_dir",
       .help = "Directory for per-worker logs and error files "
               "(<log_dir>/<run_id>/attempt_<n>/<local_rank>/); default: a temporary one",
       .target = &raw.log_dir},
      {.name = "--redirects",
       .aliases = {"-r"},
       .help =
           "Send worker output to log files instead of the console: 0 none, 1 stdout, 2 stderr, 3 "
           "both, or per local rank as 0:1,1:2",
       .target = &raw.redirects,
       .show_default = true},
      {.name = "--tee",
       .aliases = {"-t"},
       .help = "Copy worker output to log files as well as the console (values as -r)",
       .target = &raw.tee,
       .show_default = true},
      {.name = "--local_ranks_filter",
       .help = "Show console output of these local ranks only, e.g. 0,3",
       .target = &raw.local_ranks_filter},
      {.name = "--tty",
       .pet = false,
       .help =
           "Give each worker's stdout and stderr a pseudo-terminal when ddprun's own is a terminal "
           "(auto), always, or never (pipes)",
       .target = &raw.tty,
       .choices = {"auto", "always", "never"},
       .show_default = true},
      {.name = "--stdin",
       .pet = false,
       .help = "Where ddprun's stdin goes: 0 (the worker of global rank 0), none (/dev/null for "
               "all), or "
               "all (every local worker reads it, as under torchrun)",
       .target = &raw.stdin_to,
       .choices = {"0", "none", "all"},
       .show_default = true},
      {.name = "--node_rank",
       .help = "This node's rank (static rendezvous)",
       .target = &raw.node_rank,
       .show_default = true},
      {.name = "--master_addr",
       .help = "MASTER_ADDR given to the workers",
       .target = &raw.master_addr,
       .show_default = true},
      {.name = "--master_port",
       .help = "MASTER_PORT given to the workers (default: a free port ddprun reserves)",
       .target = &raw.master_port},
      {.name = "--shutdown_timeout",
       .help = "Seconds between SIGTERM and SIGKILL when stopping workers",
       .target = &raw.shutdown_timeout,
       .show_default = true},
      {.name = "--metrics_port",
       .help = "Serve /metrics, /healthz, /readyz and the live page of this job on this port of "
               "127.0.0.1 (0: a free one, said on stderr), as ddprund serves its jobs'; on many "
               "nodes, the node hosting the rendezvous serves them. With --token-file every "
               "request must carry the token (Authorization: Bearer)",
       .target = &raw.metrics_port,
       .minimum = 0},
  };
  Append(flags, SecurityFlags(raw.token_file, raw.tls_cert, raw.tls_key, raw.tls_ca));
  Append(flags,
         {
             {.name = "--local_addr",
              .help = "Address the other nodes reach this one at (default: this host's address on "
                      "the route "
                      "to the rendezvous server)",
              .target = &raw.local_addr},
             {.name = "--version",
              .pet = false,
              .help = "Print the version and exit",
              .target = &raw.version},
             {.name = "--hosts",
              .pet = false,
              .help = "Run the job on these hosts through their ddprund (HOST[:PORT],...; port "
                      "29400): one "
                      "node each, no ssh; --nnodes defaults to their number",
              .target = &raw.hosts},
             {.name = "--hostfile",
              .pet = false,
              .help = "Read --hosts from this file, one HOST[:PORT] a line",
              .target = &raw.hostfile},
             {.name = "--detach",
              .pet = false,
              .help = "With --hosts: print the job id once it runs and return (ddprun attach JOB)",
              .target = &raw.detach},
             {.name = "--export",
              .pet = false,
              .help = "With --hosts: the environment that travels: ALL (but host-specific "
                      "variables), NONE, "
                      "or "
                      "NAME,NAME=value,... (after ALL, or alone)",
              .target = &raw.export_spec,
              .show_default = true},
         });
  Append(flags, TorchrunCompatFlags(raw.compat));
  Append(flags, HangFlags(raw.hang));
  flags.push_back(PythonPreloadFlag(raw.python_preload));
  return flags;
}

}  // namespace ddprun
