// The load generator's shared pieces; see load_basics.h.
#include "load_basics.h"

#include <signal.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "ddprun/base/client_security.h"
#include "ddprun/base/status.h"

namespace ddprun::daemon_load {

void Event(const std::string& name) {
  std::printf("@event %s\n", name.c_str());
  std::fflush(stdout);
}

const char* CodeName(grpc::StatusCode code) {
  return ddprun::StatusCodeName(static_cast<ddprun::StatusCode>(code));
}

double MsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

long ReadRssKib(int pid) {
  if (pid <= 0) return -1;
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

bool DaemonAlive(int pid) { return pid <= 0 || ::kill(pid, 0) == 0; }

std::shared_ptr<grpc::Channel> NewChannel(const Options& options, const std::string& tag) {
  grpc::ChannelArguments arguments;
  arguments.SetString("ddprun.load.channel", tag);  // a distinct connection per channel
  arguments.SetMaxReceiveMessageSize(-1);           // DescribeJobs of thousands of jobs
  return grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), arguments);
}

void Prepare(grpc::ClientContext& context, const Options& options, double deadline_s, Token token) {
  context.set_deadline(std::chrono::system_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(deadline_s * 1000)));
  if (token == Token::kGood && !options.token.empty())
    context.AddMetadata(ddprun::kTokenMetadataKey, options.token);
  if (token == Token::kWrong) context.AddMetadata(ddprun::kTokenMetadataKey, "not-the-token");
}

void SetJoin(v1::AgentMessage& message, const std::string& job_id, int min_nodes, int max_nodes,
             const std::string& node_id, int64_t join_timeout_ms, int64_t heartbeat_timeout_ms) {
  auto* join = message.mutable_join();
  join->set_job_id(job_id);
  join->mutable_settings()->set_min_nodes(min_nodes);
  join->mutable_settings()->set_max_nodes(max_nodes);
  join->mutable_settings()->set_join_timeout_ms(join_timeout_ms);
  join->mutable_settings()->set_last_call_timeout_ms(1000);
  join->mutable_settings()->set_heartbeat_timeout_ms(heartbeat_timeout_ms);
  join->mutable_node()->set_node_id(node_id);
  join->mutable_node()->set_host("127.0.0.1");
  join->mutable_node()->set_nproc(1);
  join->mutable_node()->set_master_port(29500);
  join->mutable_node()->set_requested_group_rank(-1);
}

void EndNodes(std::vector<std::unique_ptr<SyncNode>>& nodes, bool cancel) {
  for (auto& node : nodes) {
    if (!node->stream) continue;
    if (cancel) node->context.TryCancel();
  }
  for (auto& node : nodes) {
    if (!node->stream) continue;
    v1::ServerEvent ignored;
    while (node->stream->Read(&ignored)) {
    }
    node->stream->Finish();
    node->stream.reset();
  }
}

}  // namespace ddprun::daemon_load
