// JobService: the gRPC Jobs service of ddprund (proto/ddprun/v1/jobs.proto), a thin adapter over
// the JobTable: authenticates every call, logs every start with the caller's identity, and turns
// a job's output into Attach streams. Synchronous handlers: an Attach holds one gRPC thread while
// it follows a job, and looks at least every 200 ms whether its caller is still there.
#pragma once

#include <string>

#include "ddprun/etcd/etcd_job_submissions.h"
#include "ddprun/v1/jobs.grpc.pb.h"
#include "job_table.h"

namespace ddprun {

// What a daemon whose rendezvous keeps its jobs in a store that other daemons share (etcd) adds
// to its job service.
struct SharedJobStore {
  // What every start's answer says of the store (StartJobResponse.shared_store); empty: the
  // daemon's own memory.
  std::string description;
  // Where the daemons record which submission runs each job id; null: nowhere. The job table's
  // on_ended lets go of a job's record.
  etcd::EtcdJobSubmissions* submissions = nullptr;
};

class JobService final : public v1::Jobs::Service {
 public:
  JobService(JobTable& table, std::string token, SharedJobStore shared = {})
      : table_(table), token_(std::move(token)), shared_(std::move(shared)) {}

  grpc::Status Start(grpc::ServerContext* context, const v1::StartJobRequest* request,
                     v1::StartJobResponse* response) override;
  grpc::Status Attach(grpc::ServerContext* context, const v1::AttachRequest* request,
                      grpc::ServerWriter<v1::JobOutput>* writer) override;
  grpc::Status Cancel(grpc::ServerContext* context, const v1::CancelJobRequest* request,
                      v1::CancelJobResponse* response) override;
  grpc::Status List(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                    v1::ListJobsResponse* response) override;
  grpc::Status Input(grpc::ServerContext* context, grpc::ServerReader<v1::InputChunk>* reader,
                     v1::InputResponse* response) override;
  grpc::Status ResizeTerminal(grpc::ServerContext* context,
                              const v1::ResizeTerminalRequest* request,
                              v1::ResizeTerminalResponse* response) override;

 private:
  JobTable& table_;
  const std::string token_;
  const SharedJobStore shared_;
};

}  // namespace ddprun
