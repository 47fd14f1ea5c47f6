// StatusMain and the formats of `ddprun status`; see status_command.h.
#include "ddprun/launcher/status_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "ddprun/launcher/rendezvous_options.h"
#include "ddprun/rendezvous/job_status_client.h"

namespace ddprun {
namespace {

std::string JsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Ranks(const NodeSnapshot& node) {
  if (node.group_rank < 0) return "-";
  const int last = node.first_global_rank + node.description.nproc - 1;
  if (last == node.first_global_rank) return std::to_string(last);
  return std::to_string(node.first_global_rank) + "-" + std::to_string(last);
}

std::string NodeState(const JobSnapshot& job, const NodeSnapshot& node) {
  if (node.succeeded) return "succeeded";
  if (node.group_rank >= 0 && job.state == "running") return "running";
  return "waiting";
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
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
    if (job.nodes.empty()) continue;
    out += "  " + Pad("GROUP_RANK", 12) + Pad("HOST", 18) + Pad("RANKS", 10) + Pad("STATE", 11) +
           Pad("HEARTBEAT", 12) + "NODE\n";
    for (const NodeSnapshot& node : job.nodes) {
      char age[32];
      std::snprintf(age, sizeof(age), "%.1f s ago",
                    static_cast<double>(node.heartbeat_age.count()) / 1000.0);
      out += "  " + Pad(node.group_rank < 0 ? "-" : std::to_string(node.group_rank), 12) +
             Pad(node.description.host, 18) + Pad(Ranks(node), 10) + Pad(NodeState(job, node), 11) +
             Pad(age, 12) + node.description.node_id + "\n";
    }
  }
  return out;
}

std::string FormatJobsJson(const std::vector<JobSnapshot>& jobs) {
  std::string out = "{\"jobs\": [";
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobSnapshot& job = jobs[j];
    out += j ? ", " : "";
    out += "{\"job_id\": " + JsonString(job.job_id) + ", \"state\": " + JsonString(job.state) +
           ", \"round\": " + std::to_string(job.round) +
           ", \"min_nodes\": " + std::to_string(job.settings.min_nodes) +
           ", \"max_nodes\": " + std::to_string(job.settings.max_nodes) +
           ", \"restarts_used\": " + std::to_string(job.restarts_used) +
           ", \"max_restarts\": " + std::to_string(job.settings.max_restarts) +
           ", \"last_failure\": " + JsonString(job.last_failure) + ", \"nodes\": [";
    for (size_t n = 0; n < job.nodes.size(); ++n) {
      const NodeSnapshot& node = job.nodes[n];
      out += n ? ", " : "";
      out += "{\"node_id\": " + JsonString(node.description.node_id) +
             ", \"host\": " + JsonString(node.description.host) +
             ", \"group_rank\": " + std::to_string(node.group_rank) + ", \"first_global_rank\": " +
             (node.group_rank < 0 ? "null" : std::to_string(node.first_global_rank)) +
             ", \"nproc\": " + std::to_string(node.description.nproc) +
             ", \"heartbeat_age_ms\": " + std::to_string(node.heartbeat_age.count()) +
             ", \"state\": " + JsonString(NodeState(job, node)) + "}";
    }
    out += "]}";
  }
  return out + "]}\n";
}

int StatusMain(const std::vector<std::string>& args) {
  CLI::App app(
      "ddprun status --rdzv_endpoint=HOST[:PORT] [--rdzv_id=JOB] [--json]\n\nShow the jobs of "
      "a rendezvous server (ddprund, or a ddprun agent hosting one).",
      "ddprun status");
  std::string endpoint_text;
  std::string job_id;
  bool json = false;
  double timeout_seconds = 5;
  std::string token_file, tls_cert, tls_key, tls_ca;
  app.add_option("--rdzv_endpoint,--rdzv-endpoint", endpoint_text, "The rendezvous server")
      ->required()
      ->envname("PET_RDZV_ENDPOINT");
  app.add_option("--rdzv_id,--rdzv-id,--run_id,--run-id", job_id, "Show only this job");
  app.add_flag("--json", json, "Print JSON instead of a table");
  app.add_option("--timeout", timeout_seconds, "Seconds to wait for the server")
      ->capture_default_str();
  AddSecurityOptions(app, token_file, tls_cert, tls_key, tls_ca);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "ddprun status: error: %s (see ddprun status --help)\n", e.what());
    return 2;
  }
  auto endpoint = ParseEndpoint(endpoint_text, kDefaultRendezvousPort);
  auto security = LoadClientSecurity(token_file, tls_cert, tls_key, tls_ca);
  const Status usage = !endpoint.ok() ? endpoint.status() : security.status();
  if (!usage.ok() || !(timeout_seconds > 0)) {
    std::fprintf(
        stderr, "ddprun status: error: %s\n",
        usage.ok() ? "--timeout must be a positive number of seconds" : usage.message().c_str());
    return 2;
  }
  auto jobs = FetchJobStatus(
      endpoint->host + ":" + std::to_string(endpoint->port), security.value(), job_id,
      std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
  if (!jobs.ok()) {
    std::fprintf(stderr, "ddprun status: error: %s\n", jobs.status().message().c_str());
    return 1;
  }
  std::cout << (json ? FormatJobsJson(jobs.value()) : FormatJobsTable(jobs.value()));
  return 0;
}

}  // namespace ddprun
