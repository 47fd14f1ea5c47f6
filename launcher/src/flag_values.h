// The values of ddprun's flags that are more than a number or a string: --nnodes, --redirects
// and --tee, --local_ranks_filter, and the run id --standalone makes up.
#pragma once

#include <set>
#include <string>

#include "command_line.h"
#include "ddprun/base/status.h"

namespace ddprun {

// "N" or "MIN:MAX" into config.min_nodes and max_nodes.
Status ResolveNnodes(const std::string& text, LaunchConfig& config);
// "3", or a per-local-rank map "0:1,1:2" (torchrun's --redirects/--tee); `flag` names it in errors.
Result<PerRankStreams> ParsePerRankStreams(const std::string& flag, const std::string& text);
// --local_ranks_filter: local ranks from 0 to nproc - 1, separated by commas.
Result<std::set<int>> ParseRankList(const std::string& text, int nproc);
// A uuid4-like id, as torchrun --standalone makes; not a secret.
std::string RandomRunId();

}  // namespace ddprun
