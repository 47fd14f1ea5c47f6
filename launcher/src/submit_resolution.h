// ResolveSubmit: `ddprun --hosts` made into the job its daemons run.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/status.h"
#include "raw_options.h"

namespace ddprun {

// A job for the daemons of --hosts: the flags checked as for one node, the agent's options
// without the submitter's own, and what the submitter's defaults fill in.
Result<SubmitRequest> ResolveSubmit(const RawOptions& raw, CLI::App& app,
                                    const std::vector<std::string>& own,
                                    const std::vector<std::string>& program_args);

}  // namespace ddprun
