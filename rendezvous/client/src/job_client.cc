// JobClient; see job_client.h.
#include "ddprun/rendezvous/job_client.h"

#include "client_channel.h"
#include "ddprun/rendezvous/grpc_status.h"

namespace ddprun {
namespace {

JobExit FromProto(const v1::AgentExit& exit) {
  JobExit converted;
  if (exit.ending_case() == v1::AgentExit::kTermSignal) {
    converted.term_signal = exit.term_signal();
  } else {
    converted.exit_code = exit.exit_code();
  }
  converted.cancelled = exit.cancelled();
  return converted;
}

}  // namespace

JobClient::JobClient(std::string address, const ClientSecurity& security)
    : address_(std::move(address)),
      security_(security),
      stub_(v1::Jobs::NewStub(OpenRendezvousChannel(address_, security_))) {}

Status JobClient::Failed(const grpc::Status& status) const {
  std::string message = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      message =
          "cannot reach its ddprund (" + message + "); check that ddprund runs there, on that port";
      break;
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      message = "its ddprund did not answer in time (" + message +
                "); check that it runs there, on that port, and is not overloaded";
      break;
    case grpc::StatusCode::UNIMPLEMENTED:
      message = "its ddprund has no job service; upgrade it";
      break;
    default:
      break;
  }
  return Status(FromGrpcStatus(status).code(), "host " + address_ + ": " + message);
}

Status JobClient::Start(const v1::StartJobRequest& request, std::chrono::milliseconds timeout,
                        v1::StartJobResponse* response) {
  grpc::ClientContext context;
  AddToken(context, security_);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::StartJobResponse ignored;
  const grpc::Status status = stub_->Start(&context, request, response ? response : &ignored);
  return status.ok() ? Status::Ok() : Failed(status);
}

Result<std::optional<JobExit>> JobClient::Cancel(const std::string& job_id, bool wait) {
  grpc::ClientContext context;
  AddToken(context, security_);
  if (!wait) context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::CancelJobRequest request;
  request.set_job_id(job_id);
  request.set_no_wait(!wait);
  v1::CancelJobResponse response;
  const grpc::Status status = stub_->Cancel(&context, request, &response);
  if (!status.ok()) return Failed(status);
  if (!response.has_exit()) return std::optional<JobExit>();
  return std::optional<JobExit>(FromProto(response.exit()));
}

Status JobClient::ResizeTerminal(const std::string& job_id, unsigned rows, unsigned cols,
                                 std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  AddToken(context, security_);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ResizeTerminalRequest request;
  request.set_job_id(job_id);
  request.set_rows(rows);
  request.set_cols(cols);
  v1::ResizeTerminalResponse response;
  const grpc::Status status = stub_->ResizeTerminal(&context, request, &response);
  return status.ok() ? Status::Ok() : Failed(status);
}

Result<std::vector<v1::HostedJob>> JobClient::List(const std::string& job_id,
                                                   std::chrono::milliseconds timeout) {
  grpc::ClientContext context;
  AddToken(context, security_);
  context.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListJobsRequest request;
  request.set_job_id(job_id);
  v1::ListJobsResponse response;
  const grpc::Status status = stub_->List(&context, request, &response);
  if (!status.ok()) return Failed(status);
  return std::vector<v1::HostedJob>(response.jobs().begin(), response.jobs().end());
}

Result<std::optional<JobExit>> JobClient::Attach(const std::string& job_id, bool follow,
                                                 const OutputHandler& on_output,
                                                 const std::function<void(int64_t)>& on_dropped) {
  grpc::ClientContext context;
  AddToken(context, security_);
  {
    MutexLock lock(mu_);
    if (stopped_) return Status(StatusCode::kCancelled, "host " + address_ + ": stopped");
    attaching_ = &context;
  }
  v1::AttachRequest request;
  request.set_job_id(job_id);
  request.set_follow(follow);
  auto reader = stub_->Attach(&context, request);
  std::optional<JobExit> exit;
  v1::JobOutput message;
  while (reader->Read(&message)) {
    switch (message.kind_case()) {
      case v1::JobOutput::kChunk:
        on_output(message.chunk().stream(), message.chunk().data());
        break;
      case v1::JobOutput::kDroppedBytes:
        on_dropped(message.dropped_bytes());
        break;
      case v1::JobOutput::kEnded:
        exit = FromProto(message.ended());
        break;
      case v1::JobOutput::KIND_NOT_SET:
        break;
    }
  }
  const grpc::Status status = reader->Finish();
  {
    MutexLock lock(mu_);
    attaching_ = nullptr;
  }
  if (exit) return exit;
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return Status(StatusCode::kUnavailable, "host " + address_ +
                                                ": the connection to its ddprund broke (" +
                                                status.error_message() + ")");
  }
  if (!status.ok()) return Failed(status);
  if (follow) {
    return Status(StatusCode::kUnavailable,
                  "host " + address_ + ": its ddprund ended the output before the job ended");
  }
  return std::optional<JobExit>();
}

void JobClient::StopAttach() {
  MutexLock lock(mu_);
  stopped_ = true;
  if (attaching_ != nullptr) attaching_->TryCancel();
}

}  // namespace ddprun

namespace ddprun {

Status JobClient::SendInput(const std::string& job_id,
                            const std::function<std::optional<std::string>()>& next) {
  grpc::ClientContext context;
  AddToken(context, security_);
  {
    MutexLock lock(mu_);
    if (input_stopped_) return Status(StatusCode::kCancelled, "host " + address_ + ": stopped");
    sending_ = &context;
  }
  v1::InputResponse response;
  auto writer = stub_->Input(&context, &response);
  v1::InputChunk chunk;
  chunk.set_job_id(job_id);
  bool open = writer->Write(chunk);  // names the job
  while (open) {
    std::optional<std::string> data = next();
    if (!data) break;
    chunk.set_data(std::move(*data));
    open = writer->Write(chunk);
  }
  if (open) writer->WritesDone();
  const grpc::Status status = writer->Finish();
  {
    MutexLock lock(mu_);
    sending_ = nullptr;
  }
  return status.ok() ? Status::Ok() : Failed(status);
}

void JobClient::StopInput() {
  MutexLock lock(mu_);
  input_stopped_ = true;
  if (sending_ != nullptr) sending_->TryCancel();
}

}  // namespace ddprun
