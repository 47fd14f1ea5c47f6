// ResolveSubmit: `ddprun --hosts` made into the job its daemons run.
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/flag_parser.h"
#include "ddprun/base/status.h"
#include "raw_options.h"

namespace ddprun {

// A job for the daemons of --hosts: the flags checked as for one node, the agent's options
// without the submitter's own, and what the submitter's defaults fill in.
// `parsed`: the command line `parser` read into `raw`.
Result<SubmitRequest> ResolveSubmit(const RawOptions& raw, const FlagParser& parser,
                                    const ParsedFlags& parsed);

}  // namespace ddprun
