// JobTable; see job_table.h.
#include "job_table.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "ddprun/agent/program_resolution.h"
#include "ddprun/base/environment_map.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/status_macros.h"

namespace ddprun {
namespace {

Status CheckJobId(const std::string& id) {
  const bool valid =
      !id.empty() && id.size() <= 128 && id != "." && id != ".." &&
      std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      });
  if (valid) return Status::Ok();
  return InvalidArgumentError("job id '" + id +
                              "' must be 1 to 128 letters, digits, '-', '_' or '.'");
}

Status CheckWorkingDirectory(const std::string& dir) {
  if (dir.empty() || dir[0] != '/') {
    return InvalidArgumentError("the working directory must be an absolute path, not '" + dir +
                                "'");
  }
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return FailedPreconditionError("the working directory " + dir +
                                   " does not exist here; the submitter's working directory must "
                                   "exist on every host (a shared file system)");
  }
  if (::access(dir.c_str(), X_OK) != 0) {
    return FailedPreconditionError("the working directory " + dir +
                                   " cannot be entered by the daemon's user here");
  }
  return Status::Ok();
}

std::string Lookup(const std::map<std::string, std::string>& env, const std::string& name) {
  auto it = env.find(name);
  return it == env.end() ? "" : it->second;
}

}  // namespace

JobTable::JobTable(JobTableOptions options) : options_(std::move(options)) {}

JobTable::~JobTable() { CancelAll(); }

Status JobTable::Check(const JobStart& start) const {
  {
    MutexLock lock(mu_);
    RETURN_IF_ERROR(CheckAdmission(start));
  }
  return CheckRequest(start);
}

Status JobTable::CheckAdmission(const JobStart& start) const {
  if (stopping_) return UnavailableError("this daemon is stopping; it starts no more jobs");
  if (options_.token_file.empty()) {
    // Without one, anyone who can reach the port (any user of this host) could run programs as
    // the daemon's user.
    return FailedPreconditionError(
        "this daemon has no token and so runs no jobs; give it one (--token-file, token_file in "
        "its configuration) and submit with that token");
  }
  if (::geteuid() == 0 && !options_.allow_root_jobs) {
    return FailedPreconditionError(
        "this daemon runs as root and runs no jobs as root; run one daemon per service account "
        "(ddprund@USER.service) or set allow_root_jobs = true in its configuration");
  }
  const std::string& id = start.description.job_id;
  RETURN_IF_ERROR(CheckJobId(id));
  auto it = jobs_.find(id);
  if ((it != jobs_.end() && !it->second->exit()) || starting_.count(id) > 0) {
    return Status(StatusCode::kAlreadyExists,
                  "job " + id + " is running here already; choose another --rdzv_id");
  }
  return Status::Ok();
}

Status JobTable::CheckRequest(const JobStart& start) const {
  const HostedJobDescription& job = start.description;
  if (job.hosts.empty() || job.host_index < 0 ||
      job.host_index >= static_cast<int>(job.hosts.size())) {
    return InvalidArgumentError("the host index " + std::to_string(job.host_index) +
                                " names none of the job's " + std::to_string(job.hosts.size()) +
                                " hosts");
  }
  if (job.program.empty()) return InvalidArgumentError("no program to run");
  RETURN_IF_ERROR(CheckWorkingDirectory(job.working_dir));
  if (::access(options_.agent_program.c_str(), X_OK) != 0) {
    return FailedPreconditionError("the node agent " + options_.agent_program +
                                   " is missing here; set agent_program in the daemon's "
                                   "configuration");
  }
  // The program as the agent will look for it: in the job's directory, on the job's PATH.
  ProgramContext context;
  context.working_dir = job.working_dir;
  const std::map<std::string, std::string> daemon_env = CurrentEnvironment();
  for (const char* name : {"PATH", "PYTHON_EXEC"}) {
    std::string value = Lookup(start.environment, name);
    if (value.empty()) value = Lookup(daemon_env, name);
    (std::string(name) == "PATH" ? context.path : context.python_exec) = value;
  }
  ProgramRequest request{
      job.program.front(), {job.program.begin() + 1, job.program.end()}, start.program_mode};
  if (auto resolved = ResolveWorkerCommand(request, context); !resolved.ok()) {
    return FailedPreconditionError(resolved.status().message() + " (in " + job.working_dir + ")");
  }
  return Status::Ok();
}

AgentLaunch JobTable::LaunchOf(const JobStart& start) const {
  AgentLaunch launch;
  launch.working_dir = start.description.working_dir;
  launch.forward_input = start.forward_input;
  launch.argv.push_back(options_.agent_program);
  launch.argv.insert(launch.argv.end(), start.agent_args.begin(), start.agent_args.end());
  if (!options_.token_file.empty()) launch.argv.push_back("--token-file=" + options_.token_file);
  launch.argv.push_back("--");
  launch.argv.insert(launch.argv.end(), start.description.program.begin(),
                     start.description.program.end());
  EnvironmentMap environment = CurrentEnvironment();
  // The agent logs at the submitter's level (who reads its output), not at the daemon's.
  environment.erase("DDPRUN_LOG_LEVEL");
  for (const auto& [name, value] : start.environment) environment[name] = value;
  environment["PWD"] = start.description.working_dir;
  // The agent reports only its own part of the job's failure: the submitter shows one report.
  environment["DDPRUN_HOSTED_JOB"] = start.description.job_id;
  // Workers with terminals (the submitter's stdout is one) follow its resizes through a file.
  if (environment.contains("DDPRUN_TERMINAL_SIZE")) {
    static std::atomic<uint64_t> jobs_with_terminals{0};
    const char* tmp = std::getenv("TMPDIR");
    launch.terminal_size_file = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddprund-" +
                                std::to_string(::getpid()) + "-terminal-" +
                                std::to_string(++jobs_with_terminals);
    environment["DDPRUN_TERMINAL_SIZE_FILE"] = launch.terminal_size_file;
  }
  launch.environment = ToEnvp(environment);
  if (options_.on_ended) {
    launch.on_ended = [on_ended = options_.on_ended, id = start.description.job_id] {
      on_ended(id);
    };
  }
  return launch;
}

Result<std::shared_ptr<HostedJob>> JobTable::Start(JobStart start) {
  const std::string id = start.description.job_id;
  {
    MutexLock lock(mu_);
    RETURN_IF_ERROR(CheckAdmission(start));
    starting_.insert(id);
  }
  start.description.cancel_grace = start.shutdown_timeout + options_.cancel_margin;
  Status checked = CheckRequest(start);
  Result<std::shared_ptr<HostedJob>> job =
      checked.ok()
          ? HostedJob::Start(start.description, LaunchOf(start), options_.output_buffer_bytes)
          : Result<std::shared_ptr<HostedJob>>(checked);
  MutexLock lock(mu_);
  starting_.erase(id);
  if (!job.ok()) return job.status();
  Publish(id, job.value());
  if (stopping_) job.value()->Cancel(start.description.cancel_grace);  // CancelAll missed it
  return job;
}

void JobTable::Publish(const std::string& id, std::shared_ptr<HostedJob> job) {
  jobs_[id] = std::move(job);
  start_order_.erase(std::remove(start_order_.begin(), start_order_.end(), id), start_order_.end());
  start_order_.push_back(id);
  // Forget the oldest ended jobs beyond what is kept.
  size_t ended = 0;
  for (const auto& [job_id, held] : jobs_) ended += held->exit() ? 1 : 0;
  for (auto it = start_order_.begin();
       ended > options_.kept_ended_jobs && it != start_order_.end();) {
    auto held = jobs_.find(*it);
    if (held != jobs_.end() && held->second->exit()) {
      jobs_.erase(held);
      it = start_order_.erase(it);
      --ended;
    } else {
      ++it;
    }
  }
}

std::shared_ptr<HostedJob> JobTable::Find(const std::string& job_id) const {
  MutexLock lock(mu_);
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<HostedJob>> JobTable::All() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<HostedJob>> all;
  for (const std::string& id : start_order_) {
    if (auto it = jobs_.find(id); it != jobs_.end()) all.push_back(it->second);
  }
  return all;
}

AgentExit JobTable::CancelAndWait(HostedJob& job) const {
  const std::chrono::milliseconds grace = job.description().cancel_grace;
  job.Cancel(grace);
  job.WaitEnded(std::chrono::steady_clock::now() + grace + std::chrono::seconds(5));
  return job.exit().value_or(AgentExit{});
}

void JobTable::CancelAll() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  for (const auto& job : All()) job->Cancel(job->description().cancel_grace);
  for (const auto& job : All()) CancelAndWait(*job);
}

}  // namespace ddprun
