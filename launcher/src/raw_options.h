// RawOptions: ddprun's flags as its FlagParser fills them in (flag_table.cc: every flag, its
// spellings and its PET_ variable), before Resolve (option_resolution.cc) checks them and makes a
// LaunchConfig. Private to the launcher's command line.
#pragma once

#include <string>
#include <vector>

#include "command_line.h"
#include "ddprun/base/flag_spec.h"
#include "ddprun/base/status.h"
#include "hang_options.h"
#include "torchrun_compat_options.h"

namespace ddprun {

// What the command line fills in; turned into a LaunchConfig by Resolve().
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
  int metrics_port = -1;  // -1: no HTTP endpoint
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

// Every flag of ddprun, each filling its field of `raw` (flag_spec.h).
std::vector<FlagSpec> FlagTable(RawOptions& raw);

// The flags checked and resolved into what one node runs. `resolve_program`: look for the
// program here (false for a submitted job: it runs elsewhere).
Result<LaunchConfig> Resolve(const RawOptions& raw, const std::vector<std::string>& program_args,
                             bool resolve_program = true);

}  // namespace ddprun
