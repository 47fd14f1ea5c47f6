// CrowdJoins, CountJobs and SettledRss; see held_resources.h.
#include "held_resources.h"

#include <thread>

namespace ddprun::daemon_load {

std::vector<v1::AgentMessage> CrowdJoins(const Options& options, const std::string& job_id) {
  std::vector<v1::AgentMessage> joins(static_cast<size_t>(options.crowd));
  for (int i = 0; i < options.crowd; ++i) {
    SetJoin(joins[static_cast<size_t>(i)], job_id, 2, 2, "crowd-node-" + std::to_string(i), 600'000,
            600'000);
  }
  return joins;
}

long CountJobs(const Options& options, const std::string& job_id, long* nodes) {
  auto stub = v1::Rendezvous::NewStub(NewChannel(options, "describe"));
  grpc::ClientContext context;
  Prepare(context, options, 60);
  v1::DescribeJobsRequest request;
  request.set_job_id(job_id);
  v1::DescribeJobsResponse response;
  grpc::Status status = stub->DescribeJobs(&context, request, &response);
  if (!status.ok()) return -1;
  if (nodes != nullptr) {
    *nodes = 0;
    for (const auto& job : response.jobs()) *nodes += job.nodes_size();
  }
  return response.jobs_size();
}

long SettledRss(const Options& options, int settle_ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(settle_ms));
  return ReadRssKib(options.daemon_pid);
}

}  // namespace ddprun::daemon_load
