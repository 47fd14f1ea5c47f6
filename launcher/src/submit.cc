// SubmitJob and ConcludeJob; see submit.h.
#include "submit.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <thread>

#include "ddprun/base/parsing.h"
#include "ddprun/rendezvous/job_status_client.h"
#include "input_sender.h"
#include "node_address.h"
#include "spare_hosts.h"
#include "start_request.h"

namespace ddprun {
namespace {

// `call(i)` for every host at once; each host's status.
template <typename Call>
std::vector<Status> OnEveryHost(size_t hosts, const Call& call) {
  std::vector<Status> statuses(hosts);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < hosts; ++i) threads.emplace_back([&, i] { statuses[i] = call(i); });
  for (auto& thread : threads) thread.join();
  return statuses;
}

// The first failure, and how many hosts failed.
std::string FirstFailure(const std::vector<Status>& statuses, size_t* failed) {
  std::string first;
  *failed = 0;
  for (const Status& status : statuses) {
    if (status.ok()) continue;
    if (++*failed == 1) first = status.message();
  }
  return first;
}

// Whether the agent that saw the job's root-cause failure is among the lost hosts (it could not
// print its report). The failure names its host "name (address)".
bool RootCauseHostLost(const WorkerFailure& root_cause, const FollowResult& followed) {
  for (const HostEnd& end : followed.hosts) {
    if (end.exit) continue;
    const std::string name = end.host.substr(0, end.host.rfind(':'));
    auto address = ResolveIPv4(name);
    const std::string shown = "(" + (address.ok() ? address.value() : name) + ")";
    const std::string& host = root_cause.host;
    if (host.size() >= shown.size() &&
        host.compare(host.size() - shown.size(), shown.size(), shown) == 0) {
      return true;
    }
  }
  return false;
}

using JobClients = std::vector<std::unique_ptr<JobClient>>;

// "h0:p,h1:p,...": every listed host's daemon, spares included, in the order given.
std::string JoinedHosts(const SubmitRequest& request) {
  std::string joined;
  for (const std::string& host : request.hosts) joined += (joined.empty() ? "" : ",") + host;
  return joined;
}

// Every host checks that the job could start there. An error names the first refusal. Where
// every daemon keeps its rendezvous in one shared store and --rdzv_endpoint was not given, the
// agents get every host's daemon: the job's rounds then outlive the loss of any one host.
Status CheckEveryHost(SubmitRequest& request, JobClients& clients) {
  std::vector<v1::StartJobResponse> answers(request.hosts.size());
  size_t failed = 0;
  const std::string failure = FirstFailure(
      OnEveryHost(request.hosts.size(),
                  [&](size_t i) {
                    return clients[i]->Start(StartRequestFor(request, request.hosts, i, true),
                                             kStartTimeout, &answers[i]);
                  }),
      &failed);
  if (failed == 0) {
    const bool one_store = std::all_of(answers.begin(), answers.end(), [&](const auto& answer) {
      return !answer.shared_store().empty() &&
             answer.shared_store() == answers.front().shared_store();
    });
    if (one_store && !request.rendezvous_given) request.agent_rendezvous = JoinedHosts(request);
    return Status::Ok();
  }
  return FailedPreconditionError(
      "job " + request.job_id + " not started: " + failure +
      (failed > 1 ? " (and " + std::to_string(failed - 1) + " more hosts)" : "") +
      "; nothing was started");
}

// Every host starts the job. Where one did not, the job is cancelled where it started, and
// where the answer was lost (it may have started); never where the daemon refused: an
// ALREADY_EXISTS there is another job of that id.
Status StartOnEveryHost(const SubmitRequest& request, JobClients& clients) {
  const std::vector<std::string> running = request.RunningHosts();
  const size_t hosts = running.size();
  std::vector<Status> started = OnEveryHost(hosts, [&](size_t i) {
    return clients[i]->Start(StartRequestFor(request, running, i, false), kStartTimeout);
  });
  size_t failed = 0;
  const std::string failure = FirstFailure(started, &failed);
  if (failed == 0) return Status::Ok();
  std::vector<std::string> maybe_running;
  for (size_t i = 0; i < hosts; ++i) {
    const StatusCode code = started[i].code();
    if (started[i].ok() || code == StatusCode::kDeadlineExceeded ||
        code == StatusCode::kUnavailable) {
      maybe_running.push_back(running[i]);
    }
  }
  size_t stopped = 0;
  std::string not_stopped;
  for (const HostEnd& end :
       CancelJob(request.job_id, maybe_running, request.security, /*wait=*/true)) {
    if (end.exit) {
      ++stopped;
    } else if (end.error.code() != StatusCode::kNotFound) {
      not_stopped += "; not stopped on " + end.error.message();
    }
  }
  return FailedPreconditionError("job " + request.job_id + " not started: " + failure +
                                 "; stopped it on the " + std::to_string(stopped) +
                                 " hosts where it had started" + not_stopped);
}

// --detach: the job's id on stdout, how to follow and stop it on stderr.
int Detach(const SubmitRequest& request) {
  std::printf("%s\n", request.job_id.c_str());
  std::fflush(stdout);
  std::fprintf(stderr,
               "ddprun: job %s runs on %zu hosts; ddprun attach %s follows it, ddprun cancel "
               "%s stops it (--host=%s)\n",
               request.job_id.c_str(), request.nodes, request.job_id.c_str(),
               request.job_id.c_str(), request.hosts.front().c_str());
  return 0;
}

// The hosts' output on this terminal, stdin to rank 0 where it goes, until the job ends.
int Follow(const SubmitRequest& request) {
  RemoteConsole console(STDOUT_FILENO, STDERR_FILENO);
  std::optional<InputSender> input;
  if (request.forward_input) {
    // In the background of its terminal the read fails and is retried, instead of stopping us.
    ::signal(SIGTTIN, SIG_IGN);
    input.emplace(request.job_id, request.RunningHosts(), request.security,
                  [&console] { console.LineEnteredByUser(); });
  }
  SpareHosts spares(request, console);
  FollowOptions options;
  options.say_lost = true;
  options.on_lost = [&spares](const HostEnd& lost) { return spares.TakeThePlaceOf(lost.host); };
  if (request.environment.contains("DDPRUN_TERMINAL_SIZE")) {
    options.terminal_size = [] { return TerminalSizeOf(STDOUT_FILENO); };
  }
  FollowResult followed =
      FollowJob(request.job_id, request.RunningHosts(), request.security, options, console);
  input.reset();  // the job has ended: so does its input
  return ConcludeJob(request.job_id, followed, request.agent_rendezvous, request.security, console);
}

}  // namespace

int ConcludeJob(const std::string& job_id, const FollowResult& followed,
                const std::string& rendezvous, const ClientSecurity& security,
                RemoteConsole& console) {
  // FollowJob said which hosts were lost, when they were (say_lost): a daemon that dies takes
  // its agent and workers along (parent-death signals).
  size_t lost = 0;
  for (const HostEnd& end : followed.hosts) {
    if (!end.exit && followed.signal == 0) ++lost;
  }
  if (followed.signal != 0) return 128 + followed.signal;
  if (followed.ended_for_lost_host) return 1;  // and FollowJob said why
  int status = 0;
  for (const HostEnd& end : followed.hosts) {
    if (end.exit && end.exit->status() != 0) {
      status = end.exit->status();
      break;
    }
  }
  if (status == 0 && lost == followed.hosts.size()) status = 1;
  if (status == 0 || rendezvous.empty()) return status;
  // The root cause's agent printed the report unless none saw a worker fail (a node was lost,
  // a timeout) or that agent's host is the one lost: then the rendezvous says why.
  // With daemons on one etcd, the one leading the job holds it.
  auto jobs =
      FetchJobStatusFromEach(SplitCommas(rendezvous), security, job_id, std::chrono::seconds(3));
  if (!jobs.ok() || jobs->empty()) {
    console.Note("ddprun: job " + job_id + " failed with exit status " + std::to_string(status) +
                 "; its rendezvous cannot say why: " +
                 (jobs.ok() ? "it holds no such job" : jobs.status().message()) + "\n");
    return status;
  }
  const JobSnapshot& job = jobs->front();
  if (!job.last_worker_failure || RootCauseHostLost(*job.last_worker_failure, followed)) {
    console.Note("ddprun: job " + job_id + " failed: " + job.last_failure + "\n");
  }
  return status;
}

int SubmitJob(SubmitRequest request) {
  BlockStopSignals();  // before gRPC starts its threads; a signal meanwhile waits
  JobClients clients;
  for (const auto& host : request.hosts) {
    clients.push_back(std::make_unique<JobClient>(host, request.security));
  }
  // All or nothing: every host checks first, and only then does any start.
  const Status checked = CheckEveryHost(request, clients);
  if (const int signal_number = TakePendingStopSignal(); signal_number != 0) {
    return 128 + signal_number;  // nothing was started
  }
  if (!checked.ok()) {
    std::fprintf(stderr, "ddprun: error: %s\n", checked.message().c_str());
    return 1;
  }
  if (Status s = StartOnEveryHost(request, clients); !s.ok()) {
    std::fprintf(stderr, "ddprun: error: %s\n", s.message().c_str());
    return 1;
  }
  // A stop signal during the start: the job is undone everywhere (a followed job's FollowJob
  // would do it too, but a detached one never gets there).
  if (const int signal_number = TakePendingStopSignal(); signal_number != 0) {
    CancelJob(request.job_id, request.RunningHosts(), request.security, /*wait=*/true);
    std::fprintf(stderr,
                 "ddprun: job %s cancelled on its %zu hosts: signal %d came while it "
                 "started\n",
                 request.job_id.c_str(), request.nodes, signal_number);
    return 128 + signal_number;
  }
  return request.detach ? Detach(request) : Follow(request);
}

}  // namespace ddprun
