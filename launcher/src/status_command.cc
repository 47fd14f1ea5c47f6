// StatusMain and the formats of `ddprun status`; see status_command.h.
#include "status_command.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>

#include "ddprun/base/parsing.h"
#include "ddprun/rendezvous/job_status_client.h"
#include "ddprun/rendezvous/status_json.h"
#include "rendezvous_options.h"
#include "subcommand.h"

namespace ddprun {
namespace {

std::string Ranks(const NodeSnapshot& node) {
  if (node.group_rank < 0) return "-";
  const int last = node.first_global_rank + node.description.nproc - 1;
  if (last == node.first_global_rank) return std::to_string(last);
  return std::to_string(node.first_global_rank) + "-" + std::to_string(last);
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string SecondsAgo(std::chrono::milliseconds age) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s ago", static_cast<double>(age.count()) / 1000.0);
  return text;
}

// "101 ms", "212 ms, straggler", or "-" before a window of steps was seen.
std::string StepTimeOf(const RankProgress& rank) {
  if (rank.step_time.count() <= 0) return "-";
  return FormatStepTime(rank.step_time) + (rank.straggler ? ", straggler" : "");
}

// Each rank's last progress and step time (hang or straggler detection on), under its node's
// table; a straggler's step time says so.
void AppendRankProgress(const JobSnapshot& job, std::string& out) {
  bool any = false;
  for (const NodeSnapshot& node : job.nodes) any = any || !node.progress.empty();
  if (!any) return;
  out += "  " + Pad("RANK", 6) + Pad("HOST", 18) + Pad("STEP", 10) + Pad("COLLECTIVES", 13) +
         Pad("STEP TIME", 22) + "LAST PROGRESS\n";
  for (const NodeSnapshot& node : job.nodes) {
    for (const RankProgress& rank : node.progress) {
      std::string last = rank.progressed ? SecondsAgo(rank.idle)
                                         : "none yet (started " + SecondsAgo(rank.idle) + ")";
      if (rank.in_collective) last += ", in a collective";
      if (rank.finished) last += ", finished";
      out += "  " + Pad(std::to_string(rank.global_rank), 6) + Pad(node.description.host, 18) +
             Pad(rank.step < 0 ? "-" : std::to_string(rank.step), 10) +
             Pad(std::to_string(rank.collectives), 13) + Pad(StepTimeOf(rank), 22) + last + "\n";
    }
  }
}

}  // namespace

std::string FormatJobsTable(const std::vector<JobSnapshot>& jobs) {
  if (jobs.empty()) return "no jobs\n";
  std::string out;
  for (const JobSnapshot& job : jobs) {
    out += "job " + job.job_id + ": " + job.state + ", round " + std::to_string(job.round) +
           ", restarts " + std::to_string(job.restarts_used) + " of " +
           std::to_string(job.settings.max_restarts) + ", nodes " +
           std::to_string(job.nodes.size()) +
           " (--nnodes=" + std::to_string(job.settings.min_nodes) + ":" +
           std::to_string(job.settings.max_nodes) + ")\n";
    if (!job.last_failure.empty()) out += "  last failure: " + job.last_failure + "\n";
    for (const NodeSnapshot& node : job.nodes) {
      if (node.description.scheduler.empty()) continue;
      out += "  run by: " + node.description.scheduler + "\n";  // the same on every node
      break;
    }
    if (job.nodes.empty()) continue;
    out += "  " + Pad("GROUP_RANK", 12) + Pad("HOST", 18) + Pad("RANKS", 10) + Pad("STATE", 11) +
           Pad("HEARTBEAT", 12) + "NODE\n";
    for (const NodeSnapshot& node : job.nodes) {
      out += "  " + Pad(node.group_rank < 0 ? "-" : std::to_string(node.group_rank), 12) +
             Pad(node.description.host, 18) + Pad(Ranks(node), 10) +
             Pad(NodeStateName(job, node), 11) + Pad(SecondsAgo(node.heartbeat_age), 12) +
             node.description.node_id + "\n";
    }
    AppendRankProgress(job, out);
  }
  return out;
}

int StatusMain(const std::vector<std::string>& args) {
  std::string endpoint_text;
  std::string job_id;
  bool json = false;
  double timeout_seconds = 5;
  std::string token_file, tls_cert, tls_key, tls_ca;
  std::vector<FlagSpec> flags = {
      {.name = "--rdzv_endpoint",
       .help = "The rendezvous server; with daemons on one etcd, several (HOST[:PORT],...)",
       .target = &endpoint_text,
       .required = true},
      {.name = "--rdzv_id",
       .aliases = {"--run_id"},
       .pet = false,
       .help = "Show only this job",
       .target = &job_id},
      {.name = "--json", .pet = false, .help = "Print JSON instead of a table", .target = &json},
      {.name = "--timeout",
       .pet = false,
       .help = "Seconds to wait for the server",
       .target = &timeout_seconds,
       .show_default = true},
  };
  for (FlagSpec& flag : SecurityFlags(token_file, tls_cert, tls_key, tls_ca)) {
    flags.push_back(std::move(flag));
  }
  CommandSpec command{
      .synopsis = "ddprun status --rdzv_endpoint=HOST[:PORT][,...] [--rdzv_id=JOB] [--json]",
      .description =
          "Show the jobs of a rendezvous server (ddprund, or a ddprun agent hosting one).",
      .flags = std::move(flags)};
  if (int status = ParseSubcommand(std::move(command), "status", args); status != kGoOn) {
    return status;
  }
  std::vector<std::string> addresses;
  Status endpoints_ok;
  for (const std::string& text : SplitCommas(endpoint_text)) {
    auto endpoint = ParseEndpoint(text, kDefaultRendezvousPort);
    if (!endpoint.ok()) {
      endpoints_ok = endpoint.status();
      break;
    }
    addresses.push_back(endpoint->host + ":" + std::to_string(endpoint->port));
  }
  auto security = LoadClientSecurity(token_file, tls_cert, tls_key, tls_ca);
  const Status usage = !endpoints_ok.ok() ? endpoints_ok : security.status();
  if (!usage.ok() || !(timeout_seconds > 0)) {
    std::fprintf(
        stderr, "ddprun status: error: %s\n",
        usage.ok() ? "--timeout must be a positive number of seconds" : usage.message().c_str());
    return 2;
  }
  auto jobs = FetchJobStatusFromEach(
      addresses, security.value(), job_id,
      std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  if (!jobs.ok()) {
    std::fprintf(stderr, "ddprun status: error: %s\n", jobs.status().message().c_str());
    return 1;
  }
  std::cout << (json ? JobsAsStatusJson(jobs.value()) : FormatJobsTable(jobs.value()));
  return 0;
}

}  // namespace ddprun
