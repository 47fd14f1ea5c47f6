// What of the submitter's environment travels to a job's hosts: srun's --export. ALL (the
// default): everything but what describes the submitting host or session (HOSTNAME, DISPLAY,
// SSH_*, PWD, TMPDIR, CUDA_VISIBLE_DEVICES, ...) and the token; NONE: nothing; a list of NAME
// (the submitter's value) and NAME=value, optionally after ALL ("ALL,NCCL_DEBUG=INFO").
// ddprun's own PET_<FLAG> settings travel whatever the spec says.
#pragma once

#include <map>
#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

// Whether `name` describes the host or session it is set on, and so never travels with ALL.
bool IsHostSpecificVariable(const std::string& name);

// INVALID_ARGUMENT naming the bad item when `spec` is not ALL, NONE or a list as above.
Result<std::map<std::string, std::string>> ExportedEnvironment(
    const std::string& spec, const std::map<std::string, std::string>& environment);

}  // namespace ddprun
