// Launch: runs one node's part of a job: the job's containment, its log directory, the node set
// up by the launcher (node_setup.h), and the supervisor of its workers. Blocks until it ends.
#pragma once

#include "launch_config.h"
#include "node_setup.h"

namespace ddprun {

// Runs a validated configuration on the node `set_up_node` sets up, and returns ddprun's exit
// status (2 for usage errors, printed as one line). With DDPRUN_TIMELINE=1, prints the run's
// timeline at its end.
int Launch(const LaunchConfig& config, const NodeSetUp& set_up_node);

}  // namespace ddprun
