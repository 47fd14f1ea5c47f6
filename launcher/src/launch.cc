// Launch; see launch.h.
#include "launch.h"

#include <signal.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "ddprun/agent/job_cgroup.h"
#include "ddprun/agent/leftover_sweep.h"
#include "ddprun/agent/log_line_prefix.h"
#include "ddprun/agent/worker_group_supervisor.h"
#include "ddprun/base/files.h"
#include "ddprun/base/logging.h"
#include "ddprun/base/parsing.h"
#include "ddprun/base/status_macros.h"
#include "ddprun/base/timeline.h"
#include "node_setup.h"

namespace ddprun {
namespace {

constexpr int kUsageExit = 2;

// A directory created for this run and removed when it ends, unless kept.
class TemporaryDirectory {
 public:
  static Result<TemporaryDirectory> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/ddprun_XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      return ErrnoError("creating a temporary log directory " + pattern, errno);
    }
    return TemporaryDirectory(pattern);
  }
  TemporaryDirectory(TemporaryDirectory&& other) noexcept
      : path_(std::move(other.path_)), kept_(other.kept_) {
    other.path_.clear();
  }
  ~TemporaryDirectory() {
    if (path_.empty() || kept_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }
  // Leaves the directory in place at exit.
  void Keep() { kept_ = true; }

 private:
  explicit TemporaryDirectory(std::string path) : path_(std::move(path)) {}
  std::string path_;
  bool kept_ = false;
};

std::string ProgramLabel(const LaunchConfig& config) {
  std::string label;
  for (const auto& arg : config.worker_argv) {
    if (!label.empty()) label += ' ';
    label += arg;
    if (label.size() > 120) break;
  }
  return label;
}

// The job's cgroup, or null (said once at debug level) where none can be made or
// DDPRUN_JOB_CGROUP=off: then the child subreaper alone finds what the workers leave.
std::unique_ptr<JobCgroup> MakeJobCgroup() {
  auto log = GetLogger("launcher");
  const char* setting = std::getenv("DDPRUN_JOB_CGROUP");
  if (setting != nullptr && std::string(setting) == "off") {
    log->debug("DDPRUN_JOB_CGROUP=off: no cgroup for the job's workers");
    return nullptr;
  }
  auto cgroup = JobCgroup::Create();
  if (!cgroup.ok()) {
    log->debug(
        "no cgroup for the job's workers ({}); what they leave behind is found through "
        "the child subreaper, and survives a SIGKILL of ddprun",
        cgroup.status().message());
    return nullptr;
  }
  log->debug("the job's workers run in the cgroup {}", cgroup.value()->path());
  return std::move(cgroup).value();
}

// Each worker stream is a pseudo-terminal where ddprun's own is one (--tty=auto), and follows
// the size of ddprun's terminal; ddprun's stdin goes where --stdin says.
void SetUpTerminalsAndInput(const LaunchConfig& config, SupervisorOptions& options) {
  auto terminal_for = [&](int console_fd) {
    const bool terminal = config.tty == LaunchConfig::Tty::kAlways ||
                          (config.tty == LaunchConfig::Tty::kAuto && ::isatty(console_fd) == 1);
    return terminal ? OutputChannel::kTerminal : OutputChannel::kPipe;
  };
  options.spawn.stdout_channel = terminal_for(STDOUT_FILENO);
  options.spawn.stderr_channel = terminal_for(STDERR_FILENO);
  for (int fd : {STDOUT_FILENO, STDERR_FILENO, STDIN_FILENO}) {
    if (::isatty(fd) == 1) {
      options.window_size = [fd] { return TerminalSizeOf(fd); };
      break;
    }
  }
  // A terminal of unknown size (--tty=always, no terminal here) gets the size the submitter's
  // terminal had (DDPRUN_TERMINAL_SIZE, for a job started with --hosts), else the customary
  // 24 x 80; and then the sizes the daemon writes to DDPRUN_TERMINAL_SIZE_FILE at each resize.
  options.spawn.terminal_size = {24, 80};
  if (const char* size = std::getenv("DDPRUN_TERMINAL_SIZE")) {
    if (auto parsed = ParseTerminalSize(size)) options.spawn.terminal_size = *parsed;
  }
  if (const char* file = std::getenv("DDPRUN_TERMINAL_SIZE_FILE"); file && !options.window_size) {
    options.window_size = [path = std::string(file)] {
      auto text = ReadUserFile("the terminal size file", path, 64);
      auto size = text.ok() ? ParseTerminalSize(Trim(*text)) : std::nullopt;
      return size.value_or(TerminalSize{});
    };
  }
  switch (config.stdin_to) {
    case LaunchConfig::Stdin::kRankZero:
      options.input = SupervisorOptions::Input::kRankZero;
      // In the background of its terminal ddprun cannot read it; the read fails and is retried
      // instead of stopping ddprun.
      ::signal(SIGTTIN, SIG_IGN);
      break;
    case LaunchConfig::Stdin::kNone:
      options.input = SupervisorOptions::Input::kNobody;
      break;
    case LaunchConfig::Stdin::kAll:
      options.input = SupervisorOptions::Input::kEveryWorker;
      break;
  }
}

// Nothing the job starts outlives it: orphans become this process's children, and where a
// cgroup can be made the workers run in it. Made first: its guardian is forked before any thread
// starts.
struct Containment {
  std::unique_ptr<JobCgroup> cgroup;         // null where none could be made
  std::unique_ptr<LeftoverSweep> leftovers;  // over the cgroup, or the subreaper's children
};

Containment ContainTheJob(const LaunchConfig& config) {
  if (Status s = BecomeChildSubreaper(); !s.ok()) GetLogger("launcher")->debug("{}", s.message());
  Containment containment;
  containment.cgroup = MakeJobCgroup();
  timeline::Note(containment.cgroup ? "the job's cgroup is ready" : "no cgroup for the job");
  std::vector<pid_t> spared;
  if (containment.cgroup) spared = containment.cgroup->own_children();
  containment.leftovers = std::make_unique<LeftoverSweep>(
      containment.cgroup.get(), spared, config.shutdown_timeout, SupervisorOptions().kill_timeout);
  return containment;
}

// Where the run's files go: --log_dir, or a temporary directory removed after a successful run.
struct RunLogs {
  std::optional<TemporaryDirectory> temporary;
  std::string dir;
};

Result<RunLogs> OpenRunLogs(const LaunchConfig& config) {
  RunLogs logs;
  if (config.log_dir) {
    logs.dir = *config.log_dir;
    return logs;
  }
  ASSIGN_OR_RETURN(TemporaryDirectory created, TemporaryDirectory::Create());
  logs.temporary.emplace(std::move(created));
  logs.dir = logs.temporary->path();
  // Holding only error files, it is removed when the run succeeds. Logs the user asked for are
  // kept, as torchrun keeps them.
  if (config.redirects.Any() || config.tee.Any()) {
    logs.temporary->Keep();
    std::fprintf(stderr, "ddprun: worker logs go to %s (choose the place with --log_dir)\n",
                 logs.dir.c_str());
  }
  return logs;
}

// The layout of the run's files under the log directory. A temporary directory that receives
// only error and progress files is flat (one directory).
Result<RunLogLayout> LayOutRunLogs(const LaunchConfig& config, const RunLogs& logs) {
  const bool flat = logs.temporary && !config.redirects.Any() && !config.tee.Any() &&
                    !config.rdzv_settings.hang.samples_progress();
  if (flat) return RunLogLayout::Flat(logs.dir);
  ASSIGN_OR_RETURN(RunLogLayout layout, RunLogLayout::Claim(logs.dir, config.run_id));
  if (layout.renamed()) {
    std::fprintf(stderr, "ddprun: %s/%s holds an earlier run's logs; this run's go to %s\n",
                 logs.dir.c_str(), config.run_id.c_str(), layout.run_dir().c_str());
  }
  return layout;
}

// The program, its label, its output and what the flags say of stopping and hangs.
SupervisorOptions WorkerOptionsOf(const LaunchConfig& config) {
  SupervisorOptions options;
  options.nproc = config.nproc_per_node;
  options.worker_argv = config.worker_argv;
  options.python_preload = config.python_preload;
  options.program_label = ProgramLabel(config);
  if (!config.scheduler.empty()) {
    GetLogger("launcher")->info("{}", config.scheduler_banner);
    options.program_label += " [" + config.scheduler + "]";  // the failure report says where
  }
  // Set by ddprund for the agents of a job submitted with --hosts (docs/environment.md).
  options.report_only_own_root_cause = std::getenv("DDPRUN_HOSTED_JOB") != nullptr;
  options.output.redirects = config.redirects;
  options.output.tee = config.tee;
  options.output.local_ranks_filter = config.local_ranks_filter;
  // torchrun's template for each output line's prefix: its flag's, else its variable's
  // (log_line_prefix.h).
  if (config.log_line_prefix_template) {
    options.output.line_prefix_template = config.log_line_prefix_template;
  } else if (const char* prefix_template = std::getenv(kLogLinePrefixTemplateVariable)) {
    options.output.line_prefix_template = prefix_template;
  }
  options.output.role = config.role;
  options.shutdown_timeout = config.shutdown_timeout;
  options.hang = config.rdzv_settings.hang;
  return options;
}

// --numa_binding: each local rank's CPUs and memory node, read from this machine.
Status BindWorkers(const LaunchConfig& config, SupervisorOptions& options) {
  if (!config.numa_binding) return Status::Ok();
  auto bindings = BindNodeWorkers(*config.numa_binding, config.nproc_per_node);
  if (!bindings.ok()) {
    return InvalidArgumentError(std::string("--numa_binding=") +
                                NumaBindingName(*config.numa_binding) + ": " +
                                bindings.status().message());
  }
  for (size_t local_rank = 0; local_rank < bindings->size(); ++local_rank) {
    GetLogger("launcher")
        ->info("local rank {}: {}", local_rank, (*bindings)[local_rank].Describe());
  }
  options.bindings = std::move(bindings).value();
  return Status::Ok();
}

// What every worker of the job shares; the round's part is added per round.
JobEnvironment JobEnvironmentOf(const LaunchConfig& config) {
  JobEnvironment job;
  job.role = config.role;
  job.run_id = config.run_id;
  job.max_restarts = config.max_restarts;
  job.virtual_local_rank = config.virtual_local_rank;
  return job;
}

// Each worker's environment: this process's, with the contract of its round and place over it.
auto WorkerEnvironments(EnvironmentMap inherited, JobEnvironment job) {
  return [inherited = std::move(inherited), job = std::move(job)](const WorkerPlacement& placement,
                                                                  const NodeAssignment& round,
                                                                  const std::string& error_file) {
    JobEnvironment round_job = job;
    round_job.master_addr = round.master_addr;
    round_job.master_port = round.master_port;
    round_job.restart_count = round.restart_count;
    round_job.round = round.round;
    round_job.store_token = round.store_credential;  // never the agent's own token
    return BuildWorkerEnvironment(inherited, round_job, placement, error_file);
  };
}

struct RunOutcome {
  int status = 0;
  bool interrupted = false;  // a stop signal ended it
  bool found_hang = false;
};

RunOutcome Supervise(boost::asio::io_context& io, SupervisorOptions options) {
  WorkerGroupSupervisor supervisor(io, std::move(options));
  RunOutcome outcome;
  outcome.status = supervisor.Run();
  outcome.interrupted = supervisor.interrupted();
  outcome.found_hang = supervisor.found_hang();
  return outcome;
}

// A failed run keeps its error files, and says where, under the failure report that points at
// them; so does a run that hung, even if a restart then succeeded: its stacks are there. A
// directory that nothing was written to is removed all the same: there is nothing to point at.
void KeepLogsOf(const RunOutcome& outcome, RunLogs& logs) {
  if (!logs.temporary || (!outcome.found_hang && outcome.status == 0)) return;
  std::error_code unreadable;  // then kept, as it may hold something
  if (std::filesystem::is_empty(logs.dir, unreadable) && !unreadable) return;
  if (outcome.found_hang) {
    logs.temporary->Keep();
    std::fprintf(stderr, "ddprun: the hang's stacks are kept in %s\n", logs.dir.c_str());
  } else {
    logs.temporary->Keep();
    std::fprintf(stderr, "ddprun: logs kept in %s (choose the place with --log_dir)\n",
                 logs.dir.c_str());
  }
}

int Failed(const Status& status, int exit_code) {
  std::fprintf(stderr, "ddprun: error: %s\n", status.message().c_str());
  return exit_code;
}

// Launch's run, from the job's containment to its end; what it made is removed on return.
int RunNode(const LaunchConfig& config, const NodeSetUp& set_up_node) {
  // A closed console must not kill the agent; output errors are ignored instead.
  ::signal(SIGPIPE, SIG_IGN);
  Containment containment = ContainTheJob(config);
  auto logs = OpenRunLogs(config);
  if (!logs.ok()) return Failed(logs.status(), 1);

  SupervisorOptions options = WorkerOptionsOf(config);
  if (Status s = BindWorkers(config, options); !s.ok()) return Failed(s, kUsageExit);
  auto layout = LayOutRunLogs(config, *logs);
  if (!layout.ok()) return Failed(layout.status(), 1);
  options.log_layout = std::move(layout).value();
  timeline::Note("the log directory is ready");
  if (containment.cgroup) options.spawn.cgroup_fd = containment.cgroup->dir_fd();
  SetUpTerminalsAndInput(config, options);

  // Single node: a store and a MASTER_PORT of our own; the node decides restarts. Multi-node:
  // the rendezvous server (maybe hosted here) decides; MASTER_PORT is group rank 0's.
  boost::asio::io_context io;
  JobEnvironment job = JobEnvironmentOf(config);
  auto set_up = set_up_node(config, io, job);
  if (!set_up.ok()) {
    const bool usage = set_up.status().code() == StatusCode::kInvalidArgument && !config.multi_node;
    return Failed(set_up.status(), usage ? kUsageExit : 1);
  }
  NodeSetup node = std::move(set_up).value();
  timeline::Note(config.multi_node ? "joined the rendezvous" : "the store listens");
  options.host = node.host;
  options.coordinator = node.coordinator.get();
  options.environment = WorkerEnvironments(CurrentEnvironment(), std::move(job));
  options.end_leftovers = [&containment, &node](const std::vector<pid_t>& running_workers) {
    std::vector<pid_t> spared = running_workers;
    for (pid_t child : node.services->Children()) spared.push_back(child);
    containment.leftovers->EndAll(spared);
  };
  options.run_over = [&node] {
    node.services->StopWatching();
    node.torch_store->Stop();
  };
  // A torch 2.x client's keys carry no attempt: each attempt's workers find an empty store, as
  // if it were new (torchrun 2.x's agent keeps the first attempt's keys, and its second
  // attempt's gloo reads them: bench/RESULTS.md, 2026-12-07). Emptied as the attempt ends, not
  // as the next starts: another node's workers may reach it before this node starts its own.
  options.attempt_over = [&node] { node.torch_store->StartAfresh(); };

  const RunOutcome outcome = Supervise(io, std::move(options));
  timeline::Note("the workers' run is over");
  node.coordinator.reset();  // closes this node's session
  KeepLogsOf(outcome, *logs);
  node.services->Finish(outcome.interrupted);
  timeline::Note("the store is shut down");
  // The cgroup's guardian removes it while the temporary directory is removed here.
  if (containment.cgroup) containment.cgroup->BeginRemoval();
  logs->temporary.reset();
  timeline::Note("the temporary log directory is removed, or kept");
  return outcome.status;
}

}  // namespace

int Launch(const LaunchConfig& config, const NodeSetUp& set_up_node) {
  timeline::Note("the command line is parsed");
  const int status = RunNode(config, set_up_node);
  timeline::Note("everything the run made is removed");
  timeline::Print();
  return status;
}

}  // namespace ddprun
