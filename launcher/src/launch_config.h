// LaunchConfig: everything `ddprun` was asked to do, after parsing and validation. Built by the
// command-line parser and read by the launcher, which sets the agent's parts up from it.
#pragma once

#include <chrono>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ddprun/agent/numa_binding.h"
#include "ddprun/agent/python_preload.h"
#include "ddprun/agent/worker_output_routing.h"
#include "ddprun/base/client_security.h"
#include "ddprun/rendezvous/round_types.h"

namespace ddprun {

struct LaunchConfig {
  int nproc_per_node = 1;
  int min_nodes = 1;
  int max_nodes = 1;
  int node_rank = 0;
  // --node_rank (or SLURM_NODEID) was given: in a multi-node job the node asks the rendezvous for
  // that group rank, as under torchrun's static rendezvous; otherwise ranks follow the joins.
  bool node_rank_given = false;
  int max_restarts = 0;  // worker-group failures that may be restarted
  bool standalone = false;
  std::string run_id = "none";
  std::string role = "default";
  std::optional<std::string> log_dir;               // unset: a temporary directory, removed at exit
  PerRankStreams redirects;                         // to files only
  PerRankStreams tee;                               // to files and the console
  std::optional<std::set<int>> local_ranks_filter;  // console output of these local ranks only
  // --tty: give the workers pseudo-terminals where ddprun's stdout/stderr is one (auto), always,
  // or never (pipes).
  enum class Tty { kAuto, kAlways, kNever };
  Tty tty = Tty::kAuto;
  // --stdin: ddprun's stdin goes to global rank 0 ("0"), to nobody ("none"), or is read by
  // every local worker itself ("all", as under torchrun).
  enum class Stdin { kRankZero, kNone, kAll };
  Stdin stdin_to = Stdin::kRankZero;
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;                      // unset: a port reserved by ddprun
  std::chrono::milliseconds shutdown_timeout{30'000};  // SIGTERM to SIGKILL grace
  // --metrics_port: the operators' HTTP endpoint on 127.0.0.1 (0: a free port); unset: none.
  std::optional<int> metrics_port;
  // torchrun's --virtual_local_rank: LOCAL_RANK=0, CUDA_VISIBLE_DEVICES the worker's own GPU.
  bool virtual_local_rank = false;
  // torchrun 2.x's --log_line_prefix_template; unset: TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE's.
  std::optional<std::string> log_line_prefix_template;
  // The scheduler whose variables filled in flags the user left out ("Slurm job 12, step 0"),
  // and the line that says which and from where (logged at info level); empty outside one.
  std::string scheduler;
  std::string scheduler_banner;
  // The worker's command line, resolved: the executable's path first, then its arguments.
  std::vector<std::string> worker_argv;
  // --python_preload: what the node's preloading interpreter runs and imports; unset: workers
  // start by exec.
  std::optional<PythonPreloadSpec> python_preload;
  // --numa_binding: how each worker is bound to the CPUs and memory nearest its GPU; unset: not.
  std::optional<NumaBinding> numa_binding;

  // Multi-node (a rendezvous endpoint was given): the server, the job's settings, how to reach
  // the server safely, and the address this node is reached at (empty: found from the route to
  // the server).
  bool multi_node = false;
  std::string rdzv_host;  // the first --rdzv_endpoint
  int rdzv_port = 29400;
  // Every --rdzv_endpoint, the first included: with more than one, daemons on one etcd, any of
  // which serves the job, and this agent never hosts the rendezvous itself.
  std::vector<std::pair<std::string, int>> rdzv_endpoints;  // host, port
  // --rdzv_backend=etcd-v3: rdzv_endpoints are etcd's members. Every agent serves the rendezvous
  // over etcd, and the one that leads the job (elected in etcd) runs its rounds.
  bool rdzv_on_etcd = false;
  RendezvousSettings rdzv_settings;
  ClientSecurity security;
  std::string tls_ca_file;  // the files security was read from, passed on to the workers
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string local_addr;
  // No --rdzv_endpoint, but --master_addr (torchrun's static rendezvous, as Kubeflow's operators
  // set it up): the rendezvous is at --master_addr:--master_port, and the workers' MASTER_PORT is
  // reserved apart.
  bool rendezvous_at_master = false;
};

}  // namespace ddprun
