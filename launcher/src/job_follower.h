// FollowJob: the submitter's side of a running job: one Attach stream per host, their output on
// this terminal (RemoteConsole), until every host's agent has ended or is lost (and, where a
// spare host takes a lost one's place, that spare's). SIGINT, SIGTERM
// and SIGHUP cancel the job on every host (a submitted job: every daemon is told before anything
// else, and the streams then show the agents' ends) or only stop following it (attach); a second
// one stops waiting. Blocks those signals in the calling thread for the duration.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/process_spawn.h"
#include "ddprun/base/status.h"
#include "ddprun/rendezvous/job_client.h"
#include "remote_console.h"

namespace ddprun {

struct HostEnd {
  std::string host;
  std::optional<JobExit> exit;  // how its agent ended; unset: lost, or still running (no follow)
  Status error;                 // why it was lost, when it was
};

// What to do when a host is lost while the job runs: follow a host that now runs the job in its
// place (a spare), or end the job on every other host (it cannot go on), or neither.
struct LostHostAnswer {
  std::optional<std::string> replacement;
  std::string end_job_because;  // not empty: cancel the job, saying this on the console
};

struct FollowOptions {
  bool follow = true;            // false: what the daemons keep, then return (ddprun logs)
  bool cancel_on_signal = true;  // false: a signal detaches (ddprun attach)
  // Every piece of output, instead of the console (ddprun logs --rank); null: the console.
  std::function<void(int host, int stream, std::string_view data)> on_output;
  // Say "lost host H: why" on the console the moment a host is lost (its stream broke: its
  // daemon, and the agent with it, are gone).
  bool say_lost = false;
  // Called on that host's following thread right after; null: nothing is done.
  std::function<LostHostAnswer(const HostEnd& lost)> on_lost;
  // The submitter's terminal size: set, each SIGWINCH sends it to every host, whose workers'
  // terminals follow. BlockStopSignals blocks SIGWINCH too, so that FollowJob receives it.
  std::function<TerminalSize()> terminal_size;
};

struct FollowResult {
  std::vector<HostEnd> hosts;        // each followed place: the last host that held it
  std::vector<HostEnd> replaced;     // hosts lost and replaced by another
  int signal = 0;                    // the signal that cancelled or detached, if one did
  bool ended_for_lost_host = false;  // on_lost ended the job
};

// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread and so in every thread it starts
// afterwards (gRPC's among them): call it first, so that FollowJob alone receives them. One that
// arrives before FollowJob waits for it.
void BlockStopSignals();
// The stop signal that arrived while they were blocked (consumed), or 0.
int TakePendingStopSignal();

FollowResult FollowJob(const std::string& job_id, const std::vector<std::string>& hosts,
                       const ClientSecurity& security, const FollowOptions& options,
                       RemoteConsole& console);

// Cancels the job on every host at once. With `wait`, returns each host's end once its agent has
// ended; without, once every host has been told (HostEnd::exit unset while its agent stops).
std::vector<HostEnd> CancelJob(const std::string& job_id, const std::vector<std::string>& hosts,
                               const ClientSecurity& security, bool wait);

}  // namespace ddprun
