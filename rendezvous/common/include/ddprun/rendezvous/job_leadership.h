// JobLeadership: which of the servers sharing one job store (daemons on one etcd cluster) runs a
// job's rounds. Exactly one at a time leads a job; the others refuse its agents' sessions, and
// the agents try the next server they were given, until they reach the leader. When the leader
// dies, its claim runs out with its lease, the next server an agent reaches claims the job, and
// rebuilds it from the leader's record and the agents' re-joins (each with the round its workers
// run).
// (docs/control_plane.md, invariants 1 and 2.)
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "ddprun/base/status.h"

namespace ddprun {

// Trailing metadata of a session a server ended because another server leads (or may lead) its
// job: the agent tries its next server at once, without a warning.
inline constexpr char kLedElsewhereMetadataKey[] = "ddprun-led-elsewhere";
// With it, where the job's leader takes sessions ("ip:port"), when the leader advertised it: the
// agent goes there next (--rdzv_backend=etcd-v3, where agents list only their own server).
inline constexpr char kLeaderAddressMetadataKey[] = "ddprun-leader-address";

class JobLeadership {
 public:
  // How long an ended job's record outlives a leader that did not forget the job (it died): its
  // id is refused as ended that long, as a daemon's ended jobs are (JobRegistry).
  static constexpr std::chrono::minutes kEndedRecordRetention{10};

  virtual ~JobLeadership() = default;

  // Whether this server leads `job_id` and may act for it now. Never blocks.
  virtual bool Leads(const std::string& job_id) const = 0;
  // Takes the job when no server leads it. OK: this server leads it now. UNAVAILABLE: another
  // leads it, or the shared store cannot be reached (the message says which). Blocks on the
  // network: call it off gRPC's threads.
  virtual Status Claim(const std::string& job_id) = 0;
  // Gives up the lead of a job (this server cannot run it). Blocks on the network.
  virtual void Release(const std::string& job_id) = 0;
  // A job this server led ended and was forgotten: its record goes, then its lead (so that the
  // job id may start anew). Blocks on the network.
  virtual void Forget(const std::string& job_id) = 0;
  // Records `record` (the job's rounds, job_record_codec.h) for whichever server leads the job
  // next, only while this one leads it: fenced by its lead, so a deposed leader's record fails
  // whatever its clock says. `ended`: the job's last record, which outlives this server's lead
  // for a while (kEndedRecordRetention), not for ever. FAILED_PRECONDITION when this server does
  // not lead the job (nothing was written), UNAVAILABLE when the store cannot say. Blocks on the
  // network.
  virtual Status Record(const std::string& job_id, const std::string& record, bool ended) = 0;
  // The job's record as its last leader left it; nullopt when none. Blocks on the network.
  virtual Result<std::optional<std::string>> Recorded(const std::string& job_id) = 0;
  // Where agents reach the server leading `job_id`, as that server advertised it and the last
  // Claim here that found it leading read it; empty when unknown, or when the leader advertised
  // none (daemons: their agents list every daemon). Never blocks.
  virtual std::string LeaderAddress(const std::string& job_id) = 0;
  // `on_lost(job_id)` runs, on the leadership's own thread, when this server may no longer act
  // for a job it claimed (its lease ran out or another server holds the job). Set it once,
  // before the first Claim; it must not block.
  virtual void SetLostCallback(std::function<void(const std::string& job_id)> on_lost) = 0;
};

}  // namespace ddprun
