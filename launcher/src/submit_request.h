// SubmitRequest: a job for the daemons of many hosts (`ddprun --hosts=... PROGRAM`), parsed and
// validated on the submitting machine. What each host's daemon is asked to run: the node agent
// with agent_args, the program, in working_dir, with environment set.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "ddprun/agent/program_resolution.h"
#include "ddprun/base/client_security.h"

namespace ddprun {

struct SubmitRequest {
  // The daemons, "host:port" (the port 29400 when not given), in the order given; the first
  // serves the job's rendezvous unless --rdzv_endpoint names another.
  std::vector<std::string> hosts;
  // How many of `hosts`, from the first, run the job when it starts (every host, or --nnodes's
  // maximum when more are listed); the rest are spares, each started in place of a host lost
  // while the job runs.
  size_t nodes = 0;
  // Fewer nodes than --nnodes's minimum cannot go on: a host lost with no spare left ends the job.
  size_t min_nodes = 1;
  std::string job_id;                   // --rdzv_id, or a random one
  std::string submission_id;            // this run's, random (StartJobRequest.submission_id)
  std::vector<std::string> agent_args;  // the node agent's options (no program, no token)
  std::vector<std::string> program;     // the program and its arguments, as typed
  ProgramMode program_mode = ProgramMode::kAsTyped;    // -m, --no_python, --run_path
  std::chrono::milliseconds shutdown_timeout{30'000};  // the agents' --shutdown_timeout
  std::string working_dir;                             // the submitter's
  std::map<std::string, std::string> environment;      // what travels (--export)
  bool detach = false;                                 // print the job id and return once it runs
  bool forward_input = false;  // stdin to global rank 0 (--stdin=0, stdin forwardable)
  std::string rendezvous;      // "host:port" of the job's rendezvous
  // The agents' --rdzv_endpoint: `rendezvous`, or every host's daemon where they share one store
  // (etcd) and --rdzv_endpoint was not given, so that the job outlives any one host.
  std::string agent_rendezvous;
  bool rendezvous_given = false;  // --rdzv_endpoint was
  ClientSecurity security;        // how to reach the daemons

  // The first `nodes` hosts.
  std::vector<std::string> RunningHosts() const {
    return {hosts.begin(), hosts.begin() + static_cast<std::ptrdiff_t>(nodes)};
  }
};

}  // namespace ddprun
