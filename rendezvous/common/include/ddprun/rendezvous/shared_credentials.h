// SharedCredentials: the jobs' store credentials (job_registry.h) where every server sharing one
// job store can check them, so that a worker's store call that fails over to another daemon, or
// that goes to a server that does not lead its job, is accepted there while the job lives.
// The server leading a job establishes its credential before any node is given it, and revokes
// it when the job ends (docs/control_plane.md, "The layout in etcd"). Every method blocks on the
// network: call them off gRPC's threads. Thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "ddprun/base/status.h"

namespace ddprun {

class SharedCredentials {
 public:
  virtual ~SharedCredentials() = default;

  // The credential of job `job_id`: the one recorded already (a server that led the job before
  // recorded it, and the job's workers hold it), else `candidate`, recorded now. UNAVAILABLE
  // when the shared store cannot say.
  virtual Result<std::string> Establish(const std::string& job_id,
                                        const std::string& candidate) = 0;
  // Forgets job `job_id`'s credential: the job ended. Failures are logged; the job's keys go
  // when the job is forgotten.
  virtual void Revoke(const std::string& job_id) = 0;
  // True when `presented` is job `job_id`'s credential as recorded (an answer may be as old as
  // the implementation's cache allows). Compares in constant time.
  virtual bool Accepts(const std::string& job_id, std::string_view presented) = 0;
};

}  // namespace ddprun
