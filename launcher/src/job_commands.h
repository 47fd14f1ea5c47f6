// The commands for jobs submitted to host daemons (`ddprun --hosts=...`), each asking one daemon
// of the job (--host, default 127.0.0.1:29400) for the job's hosts and then every host:
//   ddprun attach JOB                  the output each host keeps, then what follows, and the
//                                      job's exit status (Ctrl-C detaches; the job goes on)
//   ddprun logs JOB [--rank=R] [--follow]
//   ddprun cancel JOB                  the bounded group stop on every host
//   ddprun status [JOB]                the daemon's jobs; with JOB, each host and the rounds
#pragma once

#include <string>
#include <vector>

namespace ddprun {

// `args` after the command's name. Each returns ddprun's exit status (2 for usage errors).
int AttachMain(const std::vector<std::string>& args);
int LogsMain(const std::vector<std::string>& args);
int CancelMain(const std::vector<std::string>& args);
// `ddprun status` without --rdzv_endpoint.
int HostStatusMain(const std::vector<std::string>& args);

}  // namespace ddprun
