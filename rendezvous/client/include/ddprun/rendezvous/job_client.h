// JobClient: a client of one host daemon's job service (proto/ddprun/v1/jobs.proto), for
// `ddprun --hosts=...` and its attach, logs, cancel and status commands. Errors name the host
// ("host 10.0.0.2:29400: ...") and say what to check. Attach and SendInput block; StopAttach and
// StopInput may be called from any other thread. One Attach and one SendInput at a time.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/v1/jobs.grpc.pb.h"

namespace ddprun {

// How a host's agent of a job ended.
struct JobExit {
  int exit_code = -1;
  int term_signal = 0;
  bool cancelled = false;
  // As a shell shows it: the exit code, or 128 + the signal.
  int status() const { return term_signal != 0 ? 128 + term_signal : exit_code; }
};

class JobClient {
 public:
  JobClient(std::string address, const ClientSecurity& security);

  const std::string& address() const { return address_; }

  // Start (or, with check_only, only check) the node agent on this host; the daemon's answer in
  // `response` where one is given.
  Status Start(const v1::StartJobRequest& request, std::chrono::milliseconds timeout,
               v1::StartJobResponse* response = nullptr);
  // Cancels the job here. With `wait`, returns once its agent has ended (the daemon's grace at
  // most) and how it ended; without, once the agent is told to stop (nullopt while it stops).
  Result<std::optional<JobExit>> Cancel(const std::string& job_id, bool wait);
  // The jobs this daemon holds, or only `job_id` (NOT_FOUND when it holds none such).
  Result<std::vector<v1::HostedJob>> List(const std::string& job_id,
                                          std::chrono::milliseconds timeout);

  using OutputHandler = std::function<void(v1::JobOutput::Stream stream, std::string_view data)>;
  // Hands the job's output, from the oldest the daemon keeps, to `on_output` (and how many bytes
  // were missed to `on_dropped`). Returns the job's exit once it has ended; nullopt when not
  // following and the job still runs; CANCELLED after StopAttach; UNAVAILABLE when the
  // connection to the daemon was lost.
  Result<std::optional<JobExit>> Attach(const std::string& job_id, bool follow,
                                        const OutputHandler& on_output,
                                        const std::function<void(int64_t)>& on_dropped)
      EXCLUDES(mu_);
  void StopAttach() EXCLUDES(mu_);

  // Sends the chunks `next` gives (until it gives nullopt) as the job's input here, then ends
  // the stream (its agent sees end of file). StopInput, from any other thread, ends it at once.
  Status SendInput(const std::string& job_id,
                   const std::function<std::optional<std::string>()>& next) EXCLUDES(mu_);
  void StopInput() EXCLUDES(mu_);

  // The submitter's terminal is now rows x cols: the job's workers' terminals here follow.
  Status ResizeTerminal(const std::string& job_id, unsigned rows, unsigned cols,
                        std::chrono::milliseconds timeout);

 private:
  Status Failed(const grpc::Status& status) const;

  std::string address_;
  ClientSecurity security_;
  std::unique_ptr<v1::Jobs::Stub> stub_;
  Mutex mu_;
  grpc::ClientContext* attaching_ GUARDED_BY(mu_) = nullptr;
  bool stopped_ GUARDED_BY(mu_) = false;
  grpc::ClientContext* sending_ GUARDED_BY(mu_) = nullptr;
  bool input_stopped_ GUARDED_BY(mu_) = false;
};

}  // namespace ddprun
