// SpareHosts; see spare_hosts.h.
#include "spare_hosts.h"

#include <algorithm>

#include "ddprun/rendezvous/job_client.h"
#include "start_request.h"

namespace ddprun {

SpareHosts::SpareHosts(const SubmitRequest& request, RemoteConsole& console)
    : request_(request),
      console_(console),
      running_(request.RunningHosts()),
      next_spare_(request.nodes) {}

LostHostAnswer SpareHosts::TakeThePlaceOf(const std::string& lost) {
  MutexLock lock(mu_);
  const auto place = std::find(running_.begin(), running_.end(), lost);
  if (place == running_.end()) return {};
  while (next_spare_ < request_.hosts.size()) {
    const std::string spare = request_.hosts[next_spare_++];
    // The daemon records the hosts that run the job now, the spare in the lost host's place.
    std::vector<std::string> hosts = running_;
    hosts[static_cast<size_t>(place - running_.begin())] = spare;
    JobClient client(spare, request_.security);
    const Status started = client.Start(
        StartRequestFor(request_, hosts, static_cast<size_t>(place - running_.begin()), false),
        kStartTimeout);
    if (started.ok()) {
      *place = spare;
      console_.Note("ddprun: started job " + request_.job_id + " on spare host " + spare +
                    " in place of " + lost + "\n");
      return {.replacement = spare, .end_job_because = ""};
    }
    console_.Note("ddprun: spare " + started.message() + "; trying the next\n");
  }
  running_.erase(place);
  if (running_.size() >= request_.min_nodes) return {};
  return {.replacement = std::nullopt,
          .end_job_because =
              "job " + request_.job_id + " cannot go on: it needs " +
              std::to_string(request_.min_nodes) + " nodes, " + std::to_string(running_.size()) +
              " are left after losing host " + lost +
              ", and no spare host is left (list more hosts than --nnodes to have spares); "
              "ending it"};
}

}  // namespace ddprun
