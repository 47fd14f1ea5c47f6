// AttachMain, LogsMain, CancelMain and HostStatusMain; see job_commands.h.
#include "job_commands.h"

#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <iostream>
#include <map>

#include "ddprun/base/parsing.h"
#include "ddprun/base/thread_annotations.h"
#include "ddprun/rendezvous/job_status_client.h"
#include "job_follower.h"
#include "rendezvous_options.h"
#include "status_command.h"
#include "subcommand.h"
#include "submit.h"

namespace ddprun {
namespace {

constexpr auto kAskTimeout = std::chrono::seconds(5);

// What every job command is given: the job, the daemon to ask, how to reach it.
struct JobCommand {
  explicit JobCommand(std::string command_name) : name(std::move(command_name)) {}
  std::string name;
  std::string job_id;
  std::string host = "127.0.0.1";
  std::string token_file, tls_cert, tls_key, tls_ca;
  ClientSecurity security;
  std::string daemon;  // "host:port"
};

// The command's line: JOB (`job_required`: it must be given), the daemon to ask and how to
// reach it, and `more` flags of its own.
CommandSpec JobCommandSpec(std::string_view synopsis, std::string_view description,
                           JobCommand& command, bool job_required,
                           std::vector<FlagSpec> more = {}) {
  CommandSpec spec{.synopsis = synopsis, .description = description, .flags = std::move(more)};
  spec.positionals = {{.name = "JOB",
                       .help = "The job's id (its --rdzv_id)",
                       .target = &command.job_id,
                       .required = job_required}};
  spec.flags.push_back(
      {.name = "--host",
       .variable = "DDPRUN_HOST",
       .help = "A daemon of the job, HOST[:PORT] (port 29400), that tells its hosts",
       .target = &command.host,
       .show_default = true});
  for (FlagSpec& flag :
       SecurityFlags(command.token_file, command.tls_cert, command.tls_key, command.tls_ca)) {
    spec.flags.push_back(std::move(flag));
  }
  return spec;
}

// Parses `args`; returns kGoOn to go on, else the exit status (help: 0; usage errors: 2).
int Parse(CommandSpec spec, JobCommand& command, const std::vector<std::string>& args) {
  if (int status = ParseSubcommand(std::move(spec), command.name, args); status != kGoOn) {
    return status;
  }
  auto endpoint = ParseEndpoint(command.host, kDefaultRendezvousPort);
  auto security =
      LoadClientSecurity(command.token_file, command.tls_cert, command.tls_key, command.tls_ca);
  const Status usage = !endpoint.ok() ? endpoint.status() : security.status();
  if (!usage.ok()) {
    std::fprintf(stderr, "ddprun %s: error: %s\n", command.name.c_str(), usage.message().c_str());
    return 2;
  }
  command.security = security.value();
  command.daemon = endpoint->host + ":" + std::to_string(endpoint->port);
  return kGoOn;
}

// The job as the asked daemon holds it; prints the error and returns nullopt when it cannot.
std::optional<v1::HostedJob> FindJob(const JobCommand& command) {
  if (command.job_id.empty()) {
    std::fprintf(stderr, "ddprun %s: error: the job id is empty\n", command.name.c_str());
    return std::nullopt;
  }
  JobClient client(command.daemon, command.security);
  auto jobs = client.List(command.job_id, kAskTimeout);
  if (!jobs.ok() || jobs->empty()) {
    std::fprintf(stderr, "ddprun %s: error: %s\n", command.name.c_str(),
                 jobs.ok() ? ("host " + command.daemon + ": holds no job " + command.job_id).c_str()
                           : jobs.status().message().c_str());
    return std::nullopt;
  }
  return jobs->front();
}

std::vector<std::string> HostsOf(const v1::HostedJob& job) {
  return {job.hosts().begin(), job.hosts().end()};
}

std::string ExitText(const v1::AgentExit& exit) {
  std::string text = exit.ending_case() == v1::AgentExit::kTermSignal
                         ? "signal " + std::to_string(exit.term_signal())
                         : std::to_string(exit.exit_code());
  return exit.cancelled() ? text + " (cancelled)" : text;
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text + " ";
}

std::string Joined(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string joined;
  for (const auto& item : items) joined += (joined.empty() ? "" : " ") + item;
  return joined.size() > 60 ? joined.substr(0, 57) + "..." : joined;
}

// Keeps only the lines of one rank ("[rankR]: ..."), per host and stream, for ddprun logs.
// Thread-safe: each host's follower adds from its own thread.
class RankFilter {
 public:
  explicit RankFilter(int rank) : prefix_("[rank" + std::to_string(rank) + "]: ") {}
  void Add(int host, int stream, std::string_view data) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    std::string& held = held_[{host, stream}];
    held.append(data);
    size_t start = 0;
    for (size_t end; (end = held.find('\n', start)) != std::string::npos; start = end + 1) {
      Emit(stream, std::string_view(held).substr(start, end + 1 - start));
    }
    held.erase(0, start);
  }
  void Finish() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    for (auto& [key, held] : held_) {
      if (!held.empty()) Emit(key.second, held + "\n");
    }
  }

 private:
  void Emit(int stream, std::string_view line) {
    if (line.rfind(prefix_, 0) != 0) return;
    std::fwrite(line.data(), 1, line.size(), stream == 0 ? stdout : stderr);
  }
  const std::string prefix_;
  Mutex mu_;
  std::map<std::pair<int, int>, std::string> held_ GUARDED_BY(mu_);
};

}  // namespace

int AttachMain(const std::vector<std::string>& args) {
  BlockStopSignals();  // before gRPC starts its threads
  JobCommand command("attach");
  CommandSpec spec = JobCommandSpec(
      "ddprun attach JOB [--host=HOST[:PORT]]",
      "Follow a job submitted with --hosts: the output its hosts keep, then what comes, and its "
      "exit status.\nCtrl-C detaches; the job goes on (ddprun cancel JOB stops it).",
      command, true);
  if (int status = Parse(std::move(spec), command, args); status != kGoOn) return status;
  auto job = FindJob(command);
  if (!job) return 1;
  RemoteConsole console(STDOUT_FILENO, STDERR_FILENO);
  FollowOptions options;
  options.cancel_on_signal = false;
  options.say_lost = true;
  FollowResult followed =
      FollowJob(command.job_id, HostsOf(*job), command.security, options, console);
  if (followed.signal != 0) {
    console.Note("ddprun: detached from job " + command.job_id + "; it goes on (ddprun cancel " +
                 command.job_id + " stops it)\n");
    return 0;
  }
  return ConcludeJob(command.job_id, followed, job->rendezvous(), command.security, console);
}

int LogsMain(const std::vector<std::string>& args) {
  BlockStopSignals();
  JobCommand command("logs");
  int rank = -1;
  bool follow = false;
  CommandSpec spec = JobCommandSpec(
      "ddprun logs JOB [--rank=R] [--follow] [--host=HOST[:PORT]]",
      "The recent output of a job submitted with --hosts, as its hosts keep it (the full logs are "
      "in --log_dir there).",
      command, true,
      {{.name = "--rank",
        .pet = false,
        .help = "Only the lines of this global rank",
        .target = &rank,
        .minimum = 0},
       {.name = "--follow",
        .aliases = {"-f"},
        .pet = false,
        .help = "Go on showing output as it comes, until the job ends",
        .target = &follow}});
  if (int status = Parse(std::move(spec), command, args); status != kGoOn) return status;
  auto job = FindJob(command);
  if (!job) return 1;
  RemoteConsole console(STDOUT_FILENO, STDERR_FILENO);
  RankFilter filter(rank);
  FollowOptions options;
  options.follow = follow;
  options.cancel_on_signal = false;
  if (rank >= 0) {
    options.on_output = [&filter](int host, int stream, std::string_view data) {
      filter.Add(host, stream, data);
    };
  }
  FollowResult followed =
      FollowJob(command.job_id, HostsOf(*job), command.security, options, console);
  std::fflush(stdout);
  filter.Finish();
  int status = 0;
  for (const HostEnd& end : followed.hosts) {
    if (!end.error.ok()) {
      console.Note("ddprun logs: " + end.error.message() + "\n");
      status = 1;
    }
  }
  return status;
}

int CancelMain(const std::vector<std::string>& args) {
  JobCommand command("cancel");
  CommandSpec spec = JobCommandSpec(
      "ddprun cancel JOB [--host=HOST[:PORT]]",
      "Stop a job submitted with --hosts on every host (each agent's bounded group stop); "
      "returns once they have ended.",
      command, true);
  if (int status = Parse(std::move(spec), command, args); status != kGoOn) return status;
  auto job = FindJob(command);
  if (!job) return 1;
  const std::vector<HostEnd> ends =
      CancelJob(command.job_id, HostsOf(*job), command.security, /*wait=*/true);
  int status = 0;
  for (const HostEnd& end : ends) {
    if (end.error.ok()) continue;
    std::fprintf(stderr, "ddprun cancel: error: %s\n", end.error.message().c_str());
    status = 1;
  }
  if (status == 0) {
    std::fprintf(stderr, "ddprun: job %s has ended on its %zu hosts\n", command.job_id.c_str(),
                 ends.size());
  }
  return status;
}

int HostStatusMain(const std::vector<std::string>& args) {
  JobCommand command("status");
  CommandSpec spec = JobCommandSpec(
      "ddprun status [JOB] [--host=HOST[:PORT]]",
      "The jobs a host's daemon runs for submitters (--hosts); with JOB, each of its hosts and "
      "its rendezvous rounds.\nddprun status --rdzv_endpoint=HOST[:PORT] shows a rendezvous "
      "server's jobs instead.",
      command, false);
  if (int status = Parse(std::move(spec), command, args); status != kGoOn) return status;
  JobClient daemon(command.daemon, command.security);
  auto jobs = daemon.List(command.job_id, kAskTimeout);
  if (!jobs.ok()) {
    std::fprintf(stderr, "ddprun status: error: %s\n", jobs.status().message().c_str());
    return 1;
  }
  if (command.job_id.empty()) {
    if (jobs->empty()) {
      std::cout << "no jobs on " << command.daemon << "\n";
      return 0;
    }
    std::cout << Pad("JOB", 38) << Pad("STATE", 8) << Pad("HOSTS", 6) << Pad("EXIT", 16)
              << "PROGRAM\n";
    for (const v1::HostedJob& job : jobs.value()) {
      std::cout << Pad(job.job_id(), 38) << Pad(job.state(), 8)
                << Pad(std::to_string(job.hosts_size()), 6)
                << Pad(job.has_exit() ? ExitText(job.exit()) : "-", 16) << Joined(job.program())
                << "\n";
    }
    return 0;
  }
  const v1::HostedJob& job = jobs->front();
  std::cout << "job " << job.job_id() << ": " << Joined(job.program()) << "\n  in "
            << job.working_dir() << ", submitted by " << job.submitter() << "\n  "
            << Pad("HOST", 22) << Pad("STATE", 8) << Pad("AGENT_PID", 10) << "EXIT\n";
  int status = 0;
  for (const std::string& host : job.hosts()) {
    JobClient client(host, command.security);
    auto held = client.List(command.job_id, kAskTimeout);
    if (!held.ok()) {
      std::cout << "  " << Pad(host, 22) << "unknown: " << held.status().message() << "\n";
      status = 1;
      continue;
    }
    const v1::HostedJob& here = held->front();
    std::cout << "  " << Pad(host, 22) << Pad(here.state(), 8)
              << Pad(std::to_string(here.agent_pid()), 10)
              << (here.has_exit() ? ExitText(here.exit()) : "-") << "\n";
  }
  if (!job.rendezvous().empty()) {
    auto rounds = FetchJobStatusFromEach(SplitCommas(job.rendezvous()), command.security,
                                         command.job_id, kAskTimeout);
    if (rounds.ok()) {
      std::cout << FormatJobsTable(rounds.value());
    } else {
      std::cout << "  rendezvous: " << rounds.status().message() << "\n";
    }
  }
  return status;
}

}  // namespace ddprun
