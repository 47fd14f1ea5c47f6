// SubmitJob: `ddprun --hosts=... PROGRAM`: starts the job's node agent on every host through its
// daemon, all or nothing, then follows the job to its end (or, with --detach, returns once it
// runs) and exits with the job's exit status.
#pragma once

#include <string>

#include "job_follower.h"
#include "submit_request.h"

namespace ddprun {

// Returns ddprun's exit status: the job's root-cause exit status, 128+N after signal N, 1 when it
// could not start (the error, naming the host, is printed).
int SubmitJob(SubmitRequest request);

// The exit status of a followed job (1 when it was ended for a lost host), after saying on
// `console`, when no host's agent could report the job's root cause, what the rendezvous (when
// known: may be empty; "h:p,h:p": the first that holds the job) says it was. FollowJob said which
// hosts were lost.
int ConcludeJob(const std::string& job_id, const FollowResult& followed,
                const std::string& rendezvous, const ClientSecurity& security,
                RemoteConsole& console);

}  // namespace ddprun
