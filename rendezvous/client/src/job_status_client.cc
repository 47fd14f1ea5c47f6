// FetchJobStatus; see job_status_client.h.
#include "ddprun/rendezvous/job_status_client.h"

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

}  // namespace ddprun
