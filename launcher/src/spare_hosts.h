// SpareHosts: the hosts of a --hosts job beyond --nnodes's maximum, and what the submitter does
// when a running host is lost (its daemon, and the agent with it, are gone): start the job's
// agent on the next spare at once, so that the next round forms with it (a hot spare); with no
// spare left, end the job when too few nodes remain for it to go on, instead of letting the
// others wait for a node no one will start (join_timeout).
#pragma once

#include <string>
#include <vector>

#include "ddprun/base/thread_annotations.h"
#include "job_follower.h"
#include "remote_console.h"
#include "submit_request.h"

namespace ddprun {

class SpareHosts {
 public:
  // `request` and `console` must outlive this.
  SpareHosts(const SubmitRequest& request, RemoteConsole& console);

  // `lost` ("host:port") is gone: the spare now running the job in its place (said on the
  // console), or the reason to end the job, or neither (the job goes on with fewer nodes).
  // Any thread; one loss at a time.
  LostHostAnswer TakeThePlaceOf(const std::string& lost) EXCLUDES(mu_);

 private:
  const SubmitRequest& request_;
  RemoteConsole& console_;
  Mutex mu_;
  std::vector<std::string> running_ GUARDED_BY(mu_);  // the hosts that run the job
  size_t next_spare_ GUARDED_BY(mu_);                 // index in request_.hosts
};

}  // namespace ddprun
