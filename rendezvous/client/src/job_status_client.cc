// FetchJobStatus; see job_status_client.h.
#include "ddprun/rendezvous/job_status_client.h"

#include <future>
#include <optional>
#include <set>

#include "client_channel.h"
#include "ddprun/rendezvous/grpc_status.h"
#include "ddprun/rendezvous/proto_conversions.h"
#include "ddprun/v1/rendezvous.grpc.pb.h"

namespace ddprun {

Result<std::vector<JobSnapshot>> FetchJobStatus(const std::string& address,
                                                const ClientSecurity& security,
                                                const std::string& job_id,
                                                std::chrono::milliseconds timeout) {
  auto stub = v1::Rendezvous::NewStub(OpenRendezvousChannel(address, security));
  grpc::ClientContext context;
  AddToken(context, security);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  context.set_wait_for_ready(true);  // a server starting up answers within the timeout
  v1::DescribeJobsRequest request;
  request.set_job_id(job_id);
  v1::DescribeJobsResponse response;
  const grpc::Status status = stub->DescribeJobs(&context, request, &response);
  if (!status.ok()) {
    Status converted = FromGrpcStatus(status);
    std::string hint;
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
        status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      hint = "; check --rdzv_endpoint and that the server runs";
    }
    return Status(converted.code(),
                  "the rendezvous server at " + address + ": " + converted.message() + hint);
  }
  std::vector<JobSnapshot> jobs;
  for (const auto& job : response.jobs()) jobs.push_back(FromProto(job));
  return jobs;
}

Result<std::vector<JobSnapshot>> FetchJobStatusFromEach(const std::vector<std::string>& addresses,
                                                        const ClientSecurity& security,
                                                        const std::string& job_id,
                                                        std::chrono::milliseconds timeout) {
  if (addresses.size() == 1) return FetchJobStatus(addresses[0], security, job_id, timeout);
  std::vector<std::future<Result<std::vector<JobSnapshot>>>> answers;
  for (const std::string& address : addresses) {
    answers.push_back(std::async(std::launch::async, [&, address] {
      return FetchJobStatus(address, security, job_id, timeout);
    }));
  }
  std::vector<JobSnapshot> jobs;
  std::set<std::string> seen;
  std::optional<Status> first_failure;
  size_t failures = 0;
  bool answered = false;
  for (auto& answer : answers) {
    Result<std::vector<JobSnapshot>> held = answer.get();
    if (!held.ok() && held.status().code() != StatusCode::kNotFound) {
      if (!first_failure) first_failure = held.status();
      ++failures;
      continue;
    }
    answered = true;
    if (!held.ok()) continue;  // not this server's job
    for (JobSnapshot& job : held.value()) {
      if (seen.insert(job.job_id).second) jobs.push_back(std::move(job));
    }
  }
  if (!answered) {
    return Status(
        first_failure->code(),
        first_failure->message() +
            (failures > 1 ? " (and " + std::to_string(failures - 1) + " more servers)" : ""));
  }
  if (!job_id.empty() && jobs.empty()) {
    return NotFoundError("none of the rendezvous servers at " + std::to_string(addresses.size()) +
                         " endpoints holds job " + job_id);
  }
  return jobs;
}

}  // namespace ddprun
